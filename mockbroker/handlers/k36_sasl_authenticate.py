"""SaslAuthenticate: v0-2.

Behavior:
- After a v1 SaslHandshake: one step of the chosen mechanism (PLAIN: one round; SCRAM: two rounds,
  the server-first and server-final messages in auth_bytes). When it completes, the connection's
  principal becomes "User:<name>".
- Wrong credentials: SASL_AUTHENTICATION_FAILED with Kafka's message ("Authentication failed: Invalid
  username or password" for PLAIN, "Authentication failed: Invalid user credentials" for SCRAM), then
  the connection closes.
- OAUTHBEARER: one client message; a refused token gets Kafka's JSON error challenge
  (`{"status":"invalid_token"}`) with no error, the client's %x01 after it SASL_AUTHENTICATION_FAILED
  with that JSON as the message (mockbroker.server.oauthbearer).
- v1+: session_lifetime_ms is `connections.max.reauth.ms`, or the time left before the credential
  expires (an OAUTHBEARER token's exp) when sooner; 0 when neither applies (KIP-368).
- Re-authentication as another principal: SASL_AUTHENTICATION_FAILED ("Cannot change principals
  during re-authentication"), then the connection closes.
- After authentication completed, or on a listener without SASL: ILLEGAL_SASL_STATE ("SaslAuthenticate
  request received after successful authentication"); the connection stays open.
- Refusals close the connection `connection.failed.authentication.delay.ms` (100, as Kafka) after the
  answer, so clients read it first.
- Tokens and passwords are never logged.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers.registry import register
from mockbroker.handlers.sasl_common import SaslFailure, failed_auth_delay_s
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.sasl_authenticate_request import SaslAuthenticateRequest

RESP = api.response_module(36)
log = logging.getLogger("mockbroker.sasl")
AFTER_AUTH = "SaslAuthenticate request received after successful authentication"


@register(36, 0, 2)
def handle(ctx: RequestContext, req: SaslAuthenticateRequest) -> Any:
    conn = ctx.connection
    sasl = conn.sasl
    if sasl is None:
        log.info("broker %s: SaslAuthenticate from %s on %s listener %s: ILLEGAL_SASL_STATE", ctx.broker_id,
                 conn.peer, conn.security_protocol, conn.listener)
        return RESP.SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=AFTER_AUTH)
    try:
        answer, done = sasl.authenticate(req.auth_bytes, ctx.cluster.clock.now_ms())
    except SaslFailure as exc:
        log.warning("broker %s: SASL %s authentication from %s failed: %s", ctx.broker_id, sasl.mechanism,
                    conn.peer, exc)
        conn.close_soon("SASL authentication failed", failed_auth_delay_s(ctx.cluster.config))
        return RESP.SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                                             error_message=str(exc))
    except KafkaError as exc:
        log.info("broker %s: SaslAuthenticate from %s: %s", ctx.broker_id, conn.peer, exc)
        return RESP.SaslAuthenticateResponse(error_code=exc.code, error_message=exc.message)
    if not done:
        return RESP.SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=answer)
    conn.principal = sasl.principal
    log.info("broker %s: %s authenticated as %s (%s, session lifetime %s ms)", ctx.broker_id, conn.peer,
             conn.principal, sasl.mechanism, sasl.session_lifetime_ms)
    return RESP.SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=answer,
                                         session_lifetime_ms=sasl.session_lifetime_ms)
