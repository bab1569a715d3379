"""IncrementalAlterConfigs: v0-1.

Behavior (logic in mockbroker.state.config_admin and state.broker_loggers):
- Operations per config: SET (0), DELETE (1, back to the default), APPEND (2) and SUBTRACT (3) for
  list configs (cleanup.policy, log.cleanup.policy, ...; starting from the override or the
  default); APPEND/SUBTRACT on other configs -> INVALID_CONFIG; an unknown operation ->
  INVALID_REQUEST. validate_only checks everything and changes nothing.
- A resource named twice -> INVALID_REQUEST for each; duplicate config names or null values on a
  non-DELETE -> INVALID_REQUEST.
- TOPIC (2), BROKER (4): as AlterConfigs (same validation and effects) but only the named configs
  change.
- BROKER_LOGGER (8): name must be this broker's id; SET a level (FATAL ERROR WARN INFO DEBUG TRACE,
  else INVALID_CONFIG) of root or a mockbroker logger (unknown logger -> INVALID_CONFIG), DELETE
  unsets it (root -> INVALID_REQUEST), APPEND/SUBTRACT -> INVALID_REQUEST.
- GROUP (32): Kafka's group configs (state.group_configs): unknown name or bad value -> INVALID_CONFIG
  with Kafka's message. CLIENT_METRICS (16): subscriptions (state.client_metrics); deleting every
  config removes the subscription; unknown name or interval out of range -> INVALID_REQUEST, bad
  match pattern -> INVALID_CONFIG.
- Other resource types -> INVALID_REQUEST "Unknown resource type".
- With ACLs on, after the duplicate and null checks: ALTER_CONFIGS on the topic for TOPIC (else
  TOPIC_AUTHORIZATION_FAILED, before the name and existence checks), on the cluster for BROKER_LOGGER
  (else CLUSTER_AUTHORIZATION_FAILED, before the node id check, as Kafka's RuntimeLoggerManager) and
  BROKER (CLUSTER_AUTHORIZATION_FAILED after the node id and values, which Kafka's broker validates
  before forwarding); the error's default message.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.configs_common import answer_each_resource
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_message, error_name
from mockbroker.state.config_admin import BROKER, check_request_resource

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.incremental_alter_configs_request import (
        AlterConfigsResource,
        IncrementalAlterConfigsRequest,
    )

RESP = api.response_module(44)
logger = logging.getLogger("mockbroker.configs")


def _alter(ctx: RequestContext, r: AlterConfigsResource, validate_only: bool) -> tuple[int, str | None]:
    ops = [(c.name, c.config_operation, c.value) for c in r.configs]
    try:
        check_request_resource(ops)
        if authz.enabled(ctx):
            if r.resource_type == BROKER:  # Kafka's broker validates these before the controller authorizes
                ctx.cluster.config_admin.incremental_alter(r.resource_type, r.resource_name, ops, ctx.broker_id, True)
            denied = authz.config_denied(ctx, authz.ALTER_CONFIGS, r.resource_type, r.resource_name)
            if denied:
                raise KafkaError(denied, error_message(denied))
        ctx.cluster.config_admin.incremental_alter(r.resource_type, r.resource_name, ops, ctx.broker_id,
                                                   validate_only)
    except KafkaError as exc:
        logger.info("broker %s: incremental alter configs of %s %r for %s refused: %s %s", ctx.broker_id,
                    r.resource_type, r.resource_name, ctx.client_id, error_name(exc.code), exc.message)
        return exc.code, exc.message
    if not validate_only:
        logger.info("broker %s: configs of %s %r changed by %s", ctx.broker_id, r.resource_type, r.resource_name, ops)
    return 0, None


@register(44, 0, 1)
def handle(ctx: RequestContext, req: IncrementalAlterConfigsRequest) -> Any:
    answers = answer_each_resource(RESP, req, lambda r: _alter(ctx, r, req.validate_only))
    return RESP.IncrementalAlterConfigsResponse(responses=answers)
