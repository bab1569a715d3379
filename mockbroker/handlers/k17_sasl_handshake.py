"""SaslHandshake: v0-1.

Behavior:
- On a SASL_PLAINTEXT / SASL_SSL listener: picks the mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
  OAUTHBEARER as enabled by `sasl.enabled.mechanisms`) and answers the enabled mechanisms. After v0 the client sends
  bare SASL tokens (no Kafka headers); after v1 it sends SaslAuthenticate requests.
- A mechanism that is not enabled: UNSUPPORTED_SASL_MECHANISM with the enabled list, then the
  connection closes (Kafka's UnsupportedSaslMechanismException).
- On an authenticated connection it starts KIP-368 re-authentication; a different mechanism gets
  UNSUPPORTED_SASL_MECHANISM naming the one in use, then the connection closes.
- On a listener without SASL: ILLEGAL_SASL_STATE (Kafka's "Unexpected handshake request").
- Refusals close the connection `connection.failed.authentication.delay.ms` (100, as Kafka) after the
  answer, so clients read it first.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers.registry import register
from mockbroker.handlers.sasl_common import failed_auth_delay_s
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.sasl_handshake_request import SaslHandshakeRequest

RESP = api.response_module(17)
log = logging.getLogger("mockbroker.sasl")


@register(17, 0, 1)
def handle(ctx: RequestContext, req: SaslHandshakeRequest) -> Any:
    conn = ctx.connection
    sasl = conn.sasl
    if sasl is None:
        log.info("broker %s: SaslHandshake from %s on %s listener %s: ILLEGAL_SASL_STATE", ctx.broker_id,
                 conn.peer, conn.security_protocol, conn.listener)
        return RESP.SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    reauth = sasl.principal is not None
    previous = sasl.mechanism
    try:
        sasl.handshake(req.mechanism, ctx.api_version)
    except KafkaError as exc:
        log.warning("broker %s: SaslHandshake from %s: %s", ctx.broker_id, conn.peer, exc)
        conn.close_soon(f"SaslHandshake refused: {exc}", failed_auth_delay_s(ctx.cluster.config))
        mechanisms = [previous] if reauth and previous else sasl.enabled
        return RESP.SaslHandshakeResponse(error_code=exc.code, mechanisms=mechanisms)
    return RESP.SaslHandshakeResponse(error_code=0, mechanisms=list(sasl.enabled))
