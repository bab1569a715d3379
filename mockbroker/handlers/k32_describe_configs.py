"""DescribeConfigs: v0-4.

Behavior (logic in mockbroker.state.config_admin):
- TOPIC (2): every topic config Kafka 4 lists, with Kafka's defaults, filtered by
  configuration_keys when given; config_source 1 DYNAMIC_TOPIC_CONFIG (set on the topic), or that
  of the broker synonym (2 DYNAMIC_BROKER_CONFIG, 3 DYNAMIC_DEFAULT_BROKER_CONFIG,
  4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG). Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION (no
  message, as Kafka); an illegal name -> INVALID_TOPIC_EXCEPTION.
- BROKER (4): name = the receiving broker's id -> all its configs (read_only unless Kafka can change
  them dynamically); "" -> only the cluster-wide dynamic defaults; another id or a non-number ->
  INVALID_REQUEST. Sensitive (PASSWORD) configs have a null value, in synonyms too.
- BROKER_LOGGER (8): the mock's Python loggers and levels (source 6); name must be this broker's id.
- GROUP (32): every group config (mockbroker.state.group_configs), source 8 GROUP_CONFIG when set on
  the group, else its broker synonym's; the group need not exist; "" -> INVALID_REQUEST.
- CLIENT_METRICS (16): the configs set on the subscription (source 7 CLIENT_METRICS_CONFIG), none for
  an unknown one, as Kafka; "" -> INVALID_REQUEST.
- Other resource types -> INVALID_REQUEST "Unsupported resource type".
- include_synonyms (v1+): the topic override, then the broker synonym's layers in Kafka's order.
  include_documentation (v3+): one line per config; config_type (v3+) always. v0: is_default.
- With ACLs on, checked first for each resource: DESCRIBE_CONFIGS on the cluster for BROKER and
  BROKER_LOGGER (else CLUSTER_AUTHORIZATION_FAILED), on the topic for TOPIC (else
  TOPIC_AUTHORIZATION_FAILED, also for unknown topics); the error's default message, no configs.
  Results stay in request order.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_message, error_name

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource

RESP = api.response_module(32)
logger = logging.getLogger("mockbroker.configs")


def _entry(e: Any, synonyms: bool) -> Any:
    return RESP.DescribeConfigsResourceResult(
        name=e.name, value=e.value, read_only=e.read_only, config_source=e.source, is_default=e.is_default,
        is_sensitive=e.is_sensitive, config_type=e.config_type, documentation=e.documentation,
        synonyms=[RESP.DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in e.synonyms] if synonyms else [],
    )


def _result(ctx: RequestContext, req: DescribeConfigsRequest, r: DescribeConfigsResource) -> Any:
    out = RESP.DescribeConfigsResult(error_code=0, error_message=None, resource_type=r.resource_type,
                                     resource_name=r.resource_name, configs=[])
    denied = authz.config_denied(ctx, authz.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
    if denied:
        out.error_code, out.error_message = denied, error_message(denied)
        return out
    try:
        entries = ctx.cluster.config_admin.describe(r.resource_type, r.resource_name, ctx.broker_id,
                                                    r.configuration_keys, bool(req.include_documentation))
    except KafkaError as exc:
        logger.info("broker %s: describe configs of %s %r for %s: %s %s", ctx.broker_id, r.resource_type,
                    r.resource_name, ctx.client_id, error_name(exc.code), exc.message)
        out.error_code = exc.code
        out.error_message = None if exc.code == 3 and r.resource_type == 2 else exc.message
        return out
    out.configs = [_entry(e, bool(req.include_synonyms)) for e in entries]
    return out


@register(32, 0, 4)
def handle(ctx: RequestContext, req: DescribeConfigsRequest) -> Any:
    return RESP.DescribeConfigsResponse(results=[_result(ctx, req, r) for r in req.resources])
