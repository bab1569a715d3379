"""AlterConfigs: v0-2.

Behavior (logic in mockbroker.state.config_admin):
- Each resource's configs become its whole set of overrides: names left out are reset to the
  broker's (or Kafka's) default. validate_only checks everything and changes nothing.
- Checked in Kafka's order: a resource named twice -> INVALID_REQUEST for each; duplicate config
  names or null values -> INVALID_REQUEST; then per type:
  TOPIC (2): illegal name -> INVALID_TOPIC_EXCEPTION, unknown topic -> UNKNOWN_TOPIC_OR_PARTITION,
  unknown config names or values Kafka refuses -> INVALID_CONFIG. Changes take effect on the next
  produce (max.message.bytes, compression.type, message.timestamp.*, cleanup.policy) and the next
  retention/compaction pass.
  BROKER (4): "" sets the cluster-wide dynamic defaults, an id must be the receiving broker's
  (else INVALID_REQUEST); read-only configs and badly typed values -> INVALID_REQUEST (Kafka's
  KAFKA-13609 behaviour). Values change the cluster's configuration, and so the mock's behaviour.
  GROUP (32) and CLIENT_METRICS (16): the group's configs / the subscription become the ones given,
  checked as IncrementalAlterConfigs checks them.
  BROKER_LOGGER and other types -> INVALID_REQUEST "Unknown resource type".
- With ACLs on: ALTER_CONFIGS on the topic for TOPIC (else TOPIC_AUTHORIZATION_FAILED, checked before
  the name and existence checks), on the cluster for BROKER (else CLUSTER_AUTHORIZATION_FAILED, checked
  after the node id and values, which Kafka's broker validates before forwarding); after the
  duplicate and null checks; the error's default message.
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
from mockbroker.state.config_admin import SET, TOPIC, check_request_resource

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.alter_configs_request import AlterConfigsRequest, AlterConfigsResource

RESP = api.response_module(33)
logger = logging.getLogger("mockbroker.configs")


def _alter(ctx: RequestContext, r: AlterConfigsResource, validate_only: bool) -> tuple[int, str | None]:
    try:
        check_request_resource([(c.name, SET, c.value) for c in r.configs])
        configs = {c.name: c.value for c in r.configs}
        if authz.enabled(ctx):
            if r.resource_type != TOPIC:  # Kafka's broker validates these before the controller authorizes
                ctx.cluster.config_admin.alter(r.resource_type, r.resource_name, configs, ctx.broker_id, True)
            denied = authz.config_denied(ctx, authz.ALTER_CONFIGS, r.resource_type, r.resource_name)
            if denied:
                raise KafkaError(denied, error_message(denied))
        ctx.cluster.config_admin.alter(r.resource_type, r.resource_name, configs, ctx.broker_id, validate_only)
    except KafkaError as exc:
        logger.info("broker %s: alter configs of %s %r for %s refused: %s %s", ctx.broker_id, r.resource_type,
                    r.resource_name, ctx.client_id, error_name(exc.code), exc.message)
        return exc.code, exc.message
    if not validate_only:
        logger.info("broker %s: configs of %s %r set to %s", ctx.broker_id, r.resource_type, r.resource_name,
                    {c.name: c.value for c in r.configs})
    return 0, None


@register(33, 0, 2)
def handle(ctx: RequestContext, req: AlterConfigsRequest) -> Any:
    answers = answer_each_resource(RESP, req, lambda r: _alter(ctx, r, req.validate_only))
    return RESP.AlterConfigsResponse(responses=answers)
