"""ApiVersions: v0-4.

Behavior:
- Lists every API the registry serves, with the version ranges the handlers registered.
- A version newer than we speak is answered (by the dispatcher) with v0 and UNSUPPORTED_VERSION.
- v3+: remembers the client's software name and version on the connection.
- The response header is always v0, so any client can read it (done by the codec).
"""

from __future__ import annotations

from typing import Any

from mockbroker.handlers.registry import api_versions_list, register
from mockbroker.protocol import api

RESP = api.response_module(18)


@register(18, 0, 4)
def handle(ctx: Any, req: Any) -> Any:
    if ctx.api_version >= 3:
        ctx.connection.client_software = f"{req.client_software_name}/{req.client_software_version}"
    return RESP.ApiVersionsResponse(
        error_code=0,
        api_keys=[RESP.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in api_versions_list()],
    )
