"""DescribeClientQuotas: v0-1.

Behavior:
- Answers the stored client quotas (see mockbroker.state.quotas) whose entity matches every filter
  component: EXACT (match_type 0, the entity has that type with that name), DEFAULT (1, the type's
  default entity, match null), SPECIFIED (2, the entity has the type, any name or the default, match
  null). ``strict`` also drops entities with types the filter does not name. No components and not
  strict: every entity.
- Kafka's errors for the whole answer: an empty or repeated entity type, a match string where the
  match type takes none (or none where EXACT needs one), an unknown match type, ip combined with
  user or client-id -> INVALID_REQUEST; an entity type other than user / client-id / ip ->
  UNSUPPORTED_VERSION. Each refusal is logged.

- With ACLs on: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED for the whole answer.
Version notes: v1 is the flexible version; the fields are the same.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_name

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_client_quotas_request import DescribeClientQuotasRequest

RESP = api.response_module(48)
log = logging.getLogger("mockbroker.quotas")


@register(48, 0, 1)
def handle(ctx: RequestContext, req: DescribeClientQuotasRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.DESCRIBE_CONFIGS):
        return RESP.DescribeClientQuotasResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                 error_message=None, entries=None)
    components = [(c.entity_type, c.match_type, c.match) for c in req.components]
    try:
        found = ctx.cluster.quotas.describe(components, req.strict)
    except KafkaError as exc:
        log.info("broker %s: DescribeClientQuotas from %s refused (%s): %s", ctx.broker_id, ctx.connection.peer,
                 error_name(exc.code), exc.message)
        return RESP.DescribeClientQuotasResponse(error_code=exc.code, error_message=exc.message, entries=None)
    entries = [RESP.EntryData(entity=[RESP.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                              values=[RESP.ValueData(key=k, value=v) for k, v in sorted(values.items())])
               for entity, values in found]
    return RESP.DescribeClientQuotasResponse(error_code=0, error_message=None, entries=entries)
