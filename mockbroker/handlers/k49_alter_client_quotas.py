"""AlterClientQuotas: v0-1.

Behavior:
- Each entry sets (value) or removes (``remove``) quota keys of one entity: user, client-id, user +
  client-id, or ip; a null entity name is the type's default entity. Keys: producer_byte_rate,
  consumer_byte_rate, request_percentage, controller_mutation_rate (ip: connection_creation_rate,
  stored only). The first three throttle clients (mockbroker.server.throttle).
- Kafka's checks, per entity, with INVALID_REQUEST and a message: an empty entity, an unknown or
  repeated entity type, an empty name, ip with another type (or not an IP address), a key the entity
  does not take, a value not above 0, a fraction for producer/consumer_byte_rate, a key named twice;
  an entity named twice in one request is answered once with "Ignoring duplicate entity" (its first
  alteration stands, as in Kafka). A refused entity changes nothing; each refusal is logged.
- validate_only runs every check and changes nothing.
- With ACLs on: ALTER_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every entry.

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
from mockbroker.state.quotas import describe_entity, entity_key

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.alter_client_quotas_request import AlterClientQuotasRequest

RESP = api.response_module(49)
log = logging.getLogger("mockbroker.quotas")


@register(49, 0, 1)
def handle(ctx: RequestContext, req: AlterClientQuotasRequest) -> Any:
    results: dict[Any, tuple[list[Any], int, str | None]] = {}
    allowed = authz.authorize_cluster(ctx, authz.ALTER_CONFIGS)
    code: int
    message: str | None
    for entry in req.entries:
        pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
        key = entity_key(pairs)
        wire = [RESP.EntityData(entity_type=t, entity_name=n) for t, n in pairs]
        if not allowed:
            code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
        elif key in results:
            code, message = ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {describe_entity(key)}"
        else:
            ops = [(op.key, None if op.remove else op.value) for op in entry.ops]
            try:
                ctx.cluster.quotas.alter(pairs, ops, req.validate_only)
                code, message = 0, None
            except KafkaError as exc:
                code, message = exc.code, exc.message
        if code:
            log.info("broker %s: AlterClientQuotas for %s refused (%s): %s", ctx.broker_id, describe_entity(key),
                     error_name(code), message)
        results[key] = (wire, code, message)
    return RESP.AlterClientQuotasResponse(entries=[
        RESP.EntryData(error_code=code, error_message=message, entity=wire) for wire, code, message in results.values()
    ])
