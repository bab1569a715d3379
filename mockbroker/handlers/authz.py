"""Authorization checks for handlers: one call per Kafka check, answering True when authorization is off.

Handlers call these with their ``ctx`` (principal = ``ctx.principal``, host = the peer's IP); the
decisions come from ``mockbroker.state.acls.Authorizer``.  With authorization off (no
``authorizer.class.name``) each check costs one attribute check and allows everything.  A denied
request is logged at INFO with principal, operation and resource, as Kafka's audit log does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.state.acls import CLUSTER_NAME, NO_OPERATIONS, AclOperation, ResourceType

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext

log = logging.getLogger("mockbroker.authz")
T = TypeVar("T")

Op = AclOperation
RT = ResourceType
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = RT.TOPIC, RT.GROUP, RT.CLUSTER, RT.TRANSACTIONAL_ID
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE
CLUSTER_ACTION, IDEMPOTENT_WRITE = Op.CLUSTER_ACTION, Op.IDEMPOTENT_WRITE
DESCRIBE_CONFIGS, ALTER_CONFIGS = Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS


def enabled(ctx: RequestContext) -> bool:
    """Is authorization on (``authorizer.class.name`` set)?"""
    return ctx.cluster.acls.enabled


def host(ctx: RequestContext) -> str:
    """The client's IP address (the peer without its port, IPv6 brackets removed)."""
    peer = ctx.connection.peer
    return peer.rsplit(":", 1)[0].strip("[]") if ":" in peer else peer


def authorize(ctx: RequestContext, operation: int, resource_type: int, name: str, log_denied: bool = True) -> bool:
    """May the request's principal do ``operation`` on the resource? (True when authorization is off.)"""
    acls = ctx.cluster.acls
    if not acls.enabled:
        return True
    allowed = acls.authorize(ctx.principal, host(ctx), operation, resource_type, name)
    if not allowed and log_denied:
        log.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:%s for request = %s",
                 ctx.principal, Op(operation).name, host(ctx), RT(resource_type).name, name,
                 api.api_name(ctx.api_key))
    return allowed


def authorize_cluster(ctx: RequestContext, operation: int, log_denied: bool = True) -> bool:
    """``operation`` on the CLUSTER resource (kafka-cluster)."""
    return authorize(ctx, operation, CLUSTER, CLUSTER_NAME, log_denied)


def authorize_any(ctx: RequestContext, operation: int, resource_type: int) -> bool:
    """Is ``operation`` allowed on at least one resource of the type (Kafka's authorizeByResourceType)?"""
    acls = ctx.cluster.acls
    if not acls.enabled:
        return True
    return acls.authorize_any(ctx.principal, host(ctx), operation, resource_type)


def authorized(ctx: RequestContext, operation: int, resource_type: int, items: Iterable[T],
               name: Callable[[T], str] = str, log_denied: bool = True) -> list[T]:
    """The items whose resource (``name(item)``) allows ``operation``; every item when off."""
    items = list(items)
    if not ctx.cluster.acls.enabled:
        return items
    decided: dict[str, bool] = {}
    out = []
    for item in items:
        key = name(item)
        if key not in decided:
            decided[key] = authorize(ctx, operation, resource_type, key, log_denied)
        if decided[key]:
            out.append(item)
    return out


def denied_names(ctx: RequestContext, operation: int, resource_type: int, names: Iterable[str]) -> set[str]:
    """The names (of resources of one type) the principal may NOT ``operation``; empty when off."""
    if not ctx.cluster.acls.enabled:
        return set()
    return {n for n in set(names) if not authorize(ctx, operation, resource_type, n)}


def operations(ctx: RequestContext, resource_type: int, name: str) -> int:
    """Kafka's authorized-operations bit field for the resource (every supported one when off)."""
    return ctx.cluster.acls.authorized_operations(ctx.principal, host(ctx), resource_type, name)


def operations_if(ctx: RequestContext, asked: bool, resource_type: int, name: str) -> int:
    """:func:`operations` when the request asked for them, else the schema's "not asked" value."""
    return operations(ctx, resource_type, name) if asked else NO_OPERATIONS


# ConfigResource types (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs)
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER = 2, 4, 8


def config_denied(ctx: RequestContext, operation: int, resource_type: int, name: str) -> int:
    """0, or the error for a config resource the principal may not ``operation`` (DESCRIBE_CONFIGS /
    ALTER_CONFIGS), as Kafka: BROKER and BROKER_LOGGER are checked on the cluster
    (CLUSTER_AUTHORIZATION_FAILED), TOPIC on the topic (TOPIC_AUTHORIZATION_FAILED); other types are
    left to the handler's own checks (0)."""
    if not ctx.cluster.acls.enabled:
        return 0
    if resource_type in (CONFIG_BROKER, CONFIG_BROKER_LOGGER):
        return 0 if authorize_cluster(ctx, operation) else int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if resource_type == CONFIG_TOPIC:
        return 0 if authorize(ctx, operation, TOPIC, name) else int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if resource_type == 16:  # CLIENT_METRICS: on the cluster, as Kafka
        return 0 if authorize_cluster(ctx, operation) else int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if resource_type == 32:  # GROUP: on the group
        return 0 if authorize(ctx, operation, GROUP, name) else int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return 0
