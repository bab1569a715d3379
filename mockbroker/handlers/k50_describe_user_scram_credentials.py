"""DescribeUserScramCredentials: v0.

Behavior:
- A null or empty user list describes every user with a SCRAM credential (sorted by name); each result
  lists its credentials as (mechanism 1 = SCRAM-SHA-256 / 2 = SCRAM-SHA-512, iterations). Users added
  with a password (`sasl_users`, `--sasl-user`) have both, with 4096 iterations.
- A named user without a SCRAM credential: RESOURCE_NOT_FOUND ("Attempt to describe a user credential
  that does not exist: <name>"); a user named twice: DUPLICATE_RESOURCE, once. Other users are still
  described. The top-level error is NONE.
- Salts and keys never leave the broker.
- With ACLs on: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED for the whole answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_user_scram_credentials_request import (
        DescribeUserScramCredentialsRequest,
    )

RESP = api.response_module(50)


@register(50, 0, 0)
def handle(ctx: RequestContext, req: DescribeUserScramCredentialsRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.DESCRIBE):
        return RESP.DescribeUserScramCredentialsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                         error_message=None, results=[])
    names = [u.name for u in req.users] if req.users else None
    results = [
        RESP.DescribeUserScramCredentialsResult(
            user=user, error_code=code, error_message=message,
            credential_infos=[RESP.CredentialInfo(mechanism=m, iterations=i) for m, i in infos])
        for user, code, message, infos in ctx.cluster.credentials.describe(names)
    ]
    return RESP.DescribeUserScramCredentialsResponse(error_code=0, error_message=None, results=results)
