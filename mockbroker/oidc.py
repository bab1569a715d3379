"""A mock OpenID Connect provider beside the brokers: the identity server of SASL/OAUTHBEARER tests, with none to run.

An HTTP server (on the cluster's loop, like the Schema Registry) with a token endpoint for the client
credentials grant (RFC 6749 4.4) and the JWKS its tokens are signed with, so a client with
``sasl.oauthbearer.method=oidc`` (librdkafka) or a token provider (kafka-python, aiokafka, Java's
OAuthBearerLoginCallbackHandler) gets signed tokens that a broker with ``sasl.oauthbearer.jwks.endpoint.url``
checks as Kafka would (mockbroker.server.oauthbearer_jwks):

    POST /token                              grant_type=client_credentials [&scope=...], the client's id and
                                             secret as HTTP Basic (or client_id/client_secret in the form)
    GET  /jwks                               {"keys": [...]} (also /.well-known/jwks.json)
    GET  /.well-known/openid-configuration   issuer, token_endpoint, jwks_uri

    MockCluster(oidc=True)                   cluster.oidc.token_url, cluster.oidc.jwks_url
    mockbroker serve --oidc-port 0           prints sasl.oauthbearer.token.endpoint.url=... and the JWKS URL

A token is a JWT signed with the provider's key (RS256 by default, or ES256 ...): ``iss`` (the provider's URL
unless ``issuer`` is given), ``sub`` (the client id), ``aud`` (``audience``, "kafka"), ``iat`` and ``nbf`` (now),
``exp`` (after
``lifetime_s``), ``scope`` (the one asked for, else ``scope``), ``jti``, ``client_id`` and any extra ``claims``.
With ``clients`` ({id: secret}) only those clients get tokens (401 ``invalid_client`` for others); without, any.
``set(...)`` changes what the next tokens look like, to test refusals: ``expired=True`` (an ``exp`` two
minutes past), ``unknown_key=True`` (signed with a key the JWKS lacks, under its own ``kid``),
``bad_signature=True`` (the JWKS's ``kid``, another key), ``audience``, ``issuer``, ``lifetime_s``,
``algorithm``, ``subject``, ``claims``; ``refuse=401`` (or any status) answers the token endpoint with that
status and an RFC 6749 error; ``reset()`` undoes them all.  ``issue(...)`` makes a token in Python.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from typing import Any
from urllib.parse import unquote_plus

from aiohttp import web

from mockbroker import jws
from mockbroker.http_site import HttpSite
from mockbroker.nearest import did_you_mean

SETTINGS = ("algorithm", "audience", "bad_signature", "claims", "clients", "expired", "issuer", "lifetime_s",
            "refuse", "refuse_error", "scope", "subject", "unknown_key")
_REFUSAL_ERRORS = {400: "invalid_request", 401: "invalid_client", 403: "unauthorized_client"}
EXPIRED_BY_S = 120  # an expired token's exp lies this far in the past (beyond Kafka's default 30 s of skew)
JSON = "application/json"
PROVIDER: web.AppKey[OidcProvider] = web.AppKey("oidc")


class OidcProvider:
    """One mock identity provider: its settings, signing keys and HTTP server."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **settings: Any) -> None:
        self._defaults: dict[str, Any] = {"algorithm": "RS256", "audience": "kafka", "bad_signature": False,
                                          "claims": {}, "clients": None, "expired": False, "issuer": None,
                                          "lifetime_s": 3600, "refuse": None, "refuse_error": None, "scope": None,
                                          "subject": None, "unknown_key": False}
        self._settings: dict[str, Any] = {}
        self._defaults.update(self._checked(settings))
        self.reset()
        self._keys: dict[str, tuple[str, jws.PrivateKey]] = {}  # alg -> (kid, key): published in the JWKS
        self._rogue: dict[str, jws.PrivateKey] = {}  # alg -> a key the JWKS never shows
        self.tokens_issued = 0
        self.token_requests = 0
        self.site = HttpSite(self._app(), host, port)
        self._key(self._settings["algorithm"])

    # -- settings -------------------------------------------------------------------------------
    @staticmethod
    def _checked(changes: dict[str, Any]) -> dict[str, Any]:
        for name, value in changes.items():
            if name not in SETTINGS:
                near = did_you_mean(name, SETTINGS)
                raise ValueError(f"unknown OIDC provider setting {name!r}" + (f": did you mean {near!r}?" if near
                                                                            else f" (one of {', '.join(SETTINGS)})"))
            if name == "algorithm" and value not in jws.ALGORITHMS:
                raise ValueError(f"algorithm must be one of {', '.join(jws.ALGORITHMS)}, not {value!r}")
            if name == "lifetime_s" and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise ValueError(f"lifetime_s must be a positive number of seconds, not {value!r}")
            if name == "refuse" and value is not None and (not isinstance(value, int) or not 400 <= value <= 599):
                raise ValueError(f"refuse must be an HTTP error status (400-599) or None, not {value!r}")
            if name == "clients" and value is not None and not isinstance(value, dict):
                raise ValueError(f"clients must be a mapping of client id to secret, not {value!r}")
            if name in ("expired", "unknown_key", "bad_signature") and not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, not {value!r}")
            if name == "claims" and not isinstance(value, dict):
                raise ValueError(f"claims must be a mapping, not {value!r}")
        return dict(changes)

    def set(self, **changes: Any) -> None:
        """Change what the next tokens look like (see the module text); ValueError naming a bad setting."""
        self._settings.update(self._checked(changes))
        if "algorithm" in changes:
            self._key(changes["algorithm"])  # published from now on (a broker fetches it on the unknown kid)

    def reset(self) -> None:
        """Back to the settings the provider was made with."""
        self._settings = dict(self._defaults)

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self._settings)

    # -- keys and tokens -----------------------------------------------------------------------
    def _key(self, alg: str) -> tuple[str, jws.PrivateKey]:
        if alg not in self._keys:
            self._keys[alg] = (f"mock-{alg.lower()}-{uuid.uuid4().hex[:8]}", jws.new_private_key(alg))
        return self._keys[alg]

    def jwks(self) -> dict[str, Any]:
        return {"keys": [jws.public_jwk(key.public_key(), kid, alg) for alg, (kid, key) in list(self._keys.items())]}

    def issue(self, client_id: str = "mockbroker", scope: str | None = None, **claims: Any) -> str:
        """A token as the token endpoint would give ``client_id`` now (``claims`` added or replaced)."""
        s = self._settings
        alg = s["algorithm"]
        kid, key = self._key(alg)
        if s["unknown_key"] or s["bad_signature"]:
            if alg not in self._rogue:
                self._rogue[alg] = jws.new_private_key(alg)
            key = self._rogue[alg]
            kid = kid if s["bad_signature"] else f"unknown-{kid}"
        now = int(time.time())
        exp = now - EXPIRED_BY_S if s["expired"] else now + s["lifetime_s"]
        body: dict[str, Any] = {"iss": s["issuer"] or self.url, "sub": s["subject"] or client_id,
                                "aud": s["audience"], "iat": exp - s["lifetime_s"], "nbf": exp - s["lifetime_s"],
                                "exp": exp,
                                "jti": uuid.uuid4().hex, "client_id": client_id}
        granted = scope if scope is not None else s["scope"]
        if granted:
            body["scope"] = granted
        body.update(s["claims"])
        body.update(claims)
        self.tokens_issued += 1
        return jws.encode({"alg": alg, "typ": "JWT", "kid": kid}, {k: v for k, v in body.items() if v is not None},
                          key)

    # -- HTTP ------------------------------------------------------------------------------------
    def _app(self) -> web.Application:
        app = web.Application()
        app[PROVIDER] = self
        app.router.add_post("/token", _token)
        app.router.add_get("/jwks", _jwks)
        app.router.add_get("/.well-known/jwks.json", _jwks)
        app.router.add_get("/.well-known/openid-configuration", _discovery)
        return app

    async def start(self) -> None:
        await self.site.start()

    async def stop(self) -> None:
        await self.site.stop()

    @property
    def url(self) -> str:
        return self.site.url

    @property
    def token_url(self) -> str:
        """``sasl.oauthbearer.token.endpoint.url`` for clients."""
        return self.url + "/token"

    @property
    def jwks_url(self) -> str:
        """``sasl.oauthbearer.jwks.endpoint.url`` for brokers."""
        return self.url + "/jwks"


def _error(status: int, error: str, description: str) -> web.Response:
    headers = {"WWW-Authenticate": 'Basic realm="mockbroker-oidc"'} if status == 401 else None
    return web.json_response({"error": error, "error_description": description}, status=status, headers=headers)


def _client(request: web.Request, form: Any) -> tuple[str, str] | None:
    """(client id, secret) from HTTP Basic (RFC 6749 2.3.1: each form-urlencoded) or the form."""
    header = request.headers.get("Authorization", "")
    if header[:6].lower() == "basic ":
        try:
            user, sep, secret = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return (unquote_plus(user), unquote_plus(secret)) if sep else None
    if form.get("client_id"):
        return str(form.get("client_id")), str(form.get("client_secret", ""))
    return None


async def _token(request: web.Request) -> web.Response:
    provider = request.app[PROVIDER]
    provider.token_requests += 1
    s = provider._settings
    if s["refuse"] is not None:
        status = s["refuse"]
        return _error(status, s["refuse_error"] or _REFUSAL_ERRORS.get(status, "server_error"),
                      f"the mock OIDC provider was told to refuse (refuse={status})")
    form = await request.post()
    if form.get("grant_type") != "client_credentials":
        return _error(400, "unsupported_grant_type",
                      f"grant_type must be client_credentials, not {form.get('grant_type')!r}")
    client = _client(request, form)
    if client is None or not client[0]:
        return _error(401, "invalid_client", "no client credentials (HTTP Basic or client_id/client_secret)")
    clients = s["clients"]
    if clients is not None and clients.get(client[0]) != client[1]:
        return _error(401, "invalid_client", f"unknown client {client[0]!r} or wrong secret")
    scope = str(form["scope"]) if form.get("scope") else None
    token = provider.issue(client[0], scope)
    answer: dict[str, Any] = {"access_token": token, "token_type": "Bearer", "expires_in": s["lifetime_s"]}
    if scope or s["scope"]:
        answer["scope"] = scope or s["scope"]
    return web.json_response(answer, headers={"Cache-Control": "no-store"})


async def _jwks(request: web.Request) -> web.Response:
    return web.json_response(request.app[PROVIDER].jwks())


async def _discovery(request: web.Request) -> web.Response:
    provider = request.app[PROVIDER]
    issuer = provider._settings["issuer"] or provider.url
    return web.Response(text=json.dumps({
        "issuer": issuer, "token_endpoint": provider.token_url, "jwks_uri": provider.jwks_url,
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "id_token_signing_alg_values_supported": list(jws.ALGORITHMS)}), content_type=JSON)
