"""MockCluster's mock OIDC provider (mockbroker.oidc): started with the cluster when asked for, before the brokers
(which fetch its JWKS as they start), reset and stopped with it.

    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", oidc=True,
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER"}) as cluster:
        cluster.oidc.token_url      # sasl.oauthbearer.token.endpoint.url for clients
        cluster.oidc.set(expired=True); cluster.oidc.reset()

A broker with no ``sasl.oauthbearer.jwks.endpoint.url`` of its own validates with the provider's JWKS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mockbroker.oidc import OidcProvider
    from mockbroker.server.security import Security


def oidc_options(oidc: bool | int | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The provider's host, port and settings (None: no provider); ValueError when ``oidc`` is bad."""
    if oidc is None or oidc is False:
        return None
    if oidc is True:
        return {}
    if isinstance(oidc, int) and not isinstance(oidc, bool):
        if not 0 <= oidc <= 65535:
            raise ValueError(f"oidc must be True, a port 0-65535 or a mapping of settings, not {oidc!r}")
        return {"port": oidc}
    if isinstance(oidc, Mapping):
        return dict(oidc)
    raise ValueError(f"oidc must be True, a port 0-65535 or a mapping of settings, not {oidc!r}")


class OidcMixin:
    """The OIDC half of MockCluster (which provides security)."""

    oidc: OidcProvider | None
    _oidc_options: dict[str, Any] | None
    security: Security

    def _make_oidc(self) -> None:
        """The provider object, made (settings checked) with the cluster: a bad setting fails before anything
        listens."""
        self.oidc = None
        if self._oidc_options is None:
            return
        from mockbroker.oidc import OidcProvider

        options = dict(self._oidc_options)
        host, port = options.pop("host", "127.0.0.1"), options.pop("port", 0)
        self.oidc = OidcProvider(host, port, **options)

    async def _start_oidc(self) -> None:
        if self.oidc is None:
            return
        try:
            await self.oidc.start()
        except OSError as exc:
            raise OSError(exc.errno, f"OIDC provider: {exc.strerror or exc}") from None
        self.security.default_jwks_url = self.oidc.jwks_url

    async def _stop_oidc(self) -> None:
        if self.oidc is not None:
            await self.oidc.stop()

    def _reset_oidc(self) -> None:
        if self.oidc is not None:
            self.oidc.reset()
