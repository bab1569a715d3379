"""AlterUserScramCredentials: v0.

Behavior:
- Deletions (user, mechanism) and upsertions (user, mechanism, iterations, salt, salted password) over
  the cluster's credential store (mockbroker.state.credentials); one result per user (deletions done,
  upsertions done, then refusals, as Kafka's ScramControlManager). A user created here logs in with that
  SCRAM mechanism (its stored and server keys come from the salted password, as in Kafka).
- Refusals: empty name UNACCEPTABLE_CREDENTIAL; mechanism not 1/2 UNSUPPORTED_SASL_MECHANISM; a user
  altered twice in one request, whatever the mechanisms, DUPLICATE_RESOURCE (Kafka 3.5+ KRaft);
  iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL ("Too few iterations" / "Too many iterations");
  deleting a credential that does not exist RESOURCE_NOT_FOUND. Each refusal is logged (without salts
  or passwords).
- Connections already authenticated keep their sessions.
- With ACLs on: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every user and nothing changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.credentials import Upsertion

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.alter_user_scram_credentials_request import AlterUserScramCredentialsRequest

RESP = api.response_module(51)
log = logging.getLogger("mockbroker.sasl")


@register(51, 0, 0)
def handle(ctx: RequestContext, req: AlterUserScramCredentialsRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.ALTER):
        users = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
        return RESP.AlterUserScramCredentialsResponse(results=[
            RESP.AlterUserScramCredentialsResult(user=user, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                 error_message=None) for user in users])
    deletions = [(d.name, d.mechanism) for d in req.deletions]
    upsertions = [Upsertion(u.name, u.mechanism, u.iterations, bytes(u.salt), bytes(u.salted_password))
                  for u in req.upsertions]
    results = ctx.cluster.credentials.alter(deletions, upsertions)
    for user, code, message in results:
        if code:
            log.info("broker %s: AlterUserScramCredentials for user %r refused: %s", ctx.broker_id, user, message)
    return RESP.AlterUserScramCredentialsResponse(results=[
        RESP.AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message)
        for user, code, message in results])
