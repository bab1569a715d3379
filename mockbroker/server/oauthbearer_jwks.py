"""SASL/OAUTHBEARER with signed tokens, as Kafka's OAuthBearerValidatorCallbackHandler checks them (KIP-768).

Used on a listener when ``sasl.oauthbearer.jwks.endpoint.url`` is set (broker-wide, or for one listener as
``listener.name.<listener>.oauthbearer.sasl.oauthbearer.jwks.endpoint.url``) or the cluster runs its own OIDC
provider (MockCluster(oidc=True): its JWKS).  Kafka also wants ``...oauthbearer.sasl.server.callback.handler.class``
naming its validator, which the mock accepts and does not need; naming the unsecured validator's class
(OAuthBearerUnsecuredValidatorCallbackHandler) keeps a listener on unsigned tokens.  Without a JWKS URL a
listener keeps Kafka's unsecured validator (mockbroker.server.oauthbearer).

The token is checked as Kafka's ValidatorAccessTokenValidator (jose4j) does: three sections; a JWS algorithm
other than ``none`` (unsigned tokens are refused); the key named by the header's ``kid`` (and fitting its
``alg``) from the JWKS; the signature; ``exp`` and ``iat`` present; now minus
``sasl.oauthbearer.clock.skew.seconds`` (30) before ``exp`` and ``nbf``, when present, not after now plus the
skew; ``aud`` holding one of ``sasl.oauthbearer.expected.audience`` and ``iss`` equal to
``sasl.oauthbearer.expected.issuer`` when those are set; the subject claim (``sasl.oauthbearer.sub.claim.name``,
``sub``) a non-blank string; the scope claim (``sasl.oauthbearer.scope.claim.name``, ``scope``) a string or a
list.  A refused token gets Kafka's ``{"status":"invalid_token"}`` (mockbroker.server.oauthbearer.InvalidToken)
and the broker logs why.

The JWKS (``http://``, ``https://`` or ``file:`` URL) is fetched when the first broker starts (a broker that
cannot fetch it does not start, as Kafka's), then again every ``sasl.oauthbearer.jwks.endpoint.refresh.ms``
(an hour), and at once, in the background, when a token names a ``kid`` the set lacks (that token is refused;
at most once a minute per ``kid``, Kafka's RefreshingHttpsJwks).  Kafka 4.x fetches only URLs listed in the
JVM system property ``org.apache.kafka.sasl.oauthbearer.allowed.urls``; the mock has no such property and
fetches the URL it is given.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from mockbroker import jws
from mockbroker.plain import Slotted
from mockbroker.server.oauthbearer import InvalidToken, Token

if TYPE_CHECKING:
    from mockbroker.server.security import Settings

log = logging.getLogger("mockbroker.sasl")
VALIDATOR_CLASSES = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                     "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler")
UNSECURED_CLASS = ("org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                   "OAuthBearerUnsecuredValidatorCallbackHandler")
MISSING_KID_BACKOFF_MS = 60_000  # Kafka's MISSING_KEY_ID_CACHE_IN_FLIGHT_MS
# the names read here (each also as listener.name.<listener>.oauthbearer.<name>)
JWKS_URL, REFRESH_MS = "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.jwks.endpoint.refresh.ms"
AUDIENCE, ISSUER = "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer"
SKEW, SCOPE_CLAIM, SUB_CLAIM = ("sasl.oauthbearer.clock.skew.seconds", "sasl.oauthbearer.scope.claim.name",
                                "sasl.oauthbearer.sub.claim.name")
HANDLER = "sasl.server.callback.handler.class"
NAMES = (JWKS_URL, REFRESH_MS, AUDIENCE, ISSUER, SKEW, SCOPE_CLAIM, SUB_CLAIM, HANDLER)


def _setting(config: Settings, listener: str, name: str) -> Any:
    """Kafka's ConfigurationUtils.get: the listener's ``oauthbearer.``-prefixed value, else the broker's."""
    value = config.get(f"listener.name.{listener.lower()}.oauthbearer.{name}")
    return config.get(name) if value is None else value


def _text(value: Any) -> str | None:
    text = None if value is None else str(value).strip()
    return text or None


def _number(name: str, value: Any, default: int, minimum: int = 0) -> int:
    if value is None or str(value).strip() == "":
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if number < minimum:
        raise ValueError(f"The OAuth configuration option {name} value must be at least {minimum}")
    return number


class SecuredOptions(Slotted):
    """Kafka's validator settings for one listener."""

    __slots__ = ("audience", "issuer", "jwks_url", "refresh_ms", "scope_claim", "skew_s", "sub_claim")

    def __init__(self, jwks_url: str, refresh_ms: int = 3_600_000, audience: tuple[str, ...] = (),
                 issuer: str | None = None, skew_s: int = 30, scope_claim: str = "scope",
                 sub_claim: str = "sub") -> None:
        self.jwks_url = jwks_url
        self.refresh_ms = refresh_ms
        self.audience = audience
        self.issuer = issuer
        self.skew_s = skew_s
        self.scope_claim = scope_claim
        self.sub_claim = sub_claim

    @classmethod
    def from_config(cls, config: Settings, listener: str, default_url: str | None = None) -> SecuredOptions | None:
        """The listener's settings, or None when it has no JWKS URL (the unsecured validator); ValueError
        in Kafka's words when they are wrong.  ``default_url``: the JWKS of the cluster's own OIDC provider
        (MockCluster(oidc=True)), used when no URL is configured."""
        handler = _text(_setting(config, listener, HANDLER))
        url = _text(_setting(config, listener, JWKS_URL)) or default_url
        if handler is not None and handler not in (*VALIDATOR_CLASSES, UNSECURED_CLASS):
            raise ValueError(f"{HANDLER} {handler!r}: the mock runs Kafka's own validators only "
                             f"({VALIDATOR_CLASSES[0]} with {JWKS_URL}, or the unsecured one)")
        if handler == UNSECURED_CLASS:  # named for this listener (or the broker): unsigned tokens, as in Kafka
            return None
        if url is None:
            if handler in VALIDATOR_CLASSES:
                raise ValueError(f"The OAuth configuration option {JWKS_URL} value must be non-null")
            return None
        scheme = urlparse(url).scheme.lower()
        if scheme not in ("http", "https", "file"):
            raise ValueError(f"The OAuth configuration option {JWKS_URL} contains a URL ({url}) that contains an "
                             f"invalid protocol ({scheme or 'none'}); only \"http\", \"https\", and \"file\" "
                             "protocol are supported")
        audience_text = _setting(config, listener, AUDIENCE)
        audience = tuple(a.strip() for a in (audience_text if isinstance(audience_text, list | tuple)
                                             else str(audience_text or "").split(",")) if str(a).strip())
        return cls(url, _number(REFRESH_MS, _setting(config, listener, REFRESH_MS), 3_600_000),
                   audience, _text(_setting(config, listener, ISSUER)),
                   _number(SKEW, _setting(config, listener, SKEW), 30),
                   _text(_setting(config, listener, SCOPE_CLAIM)) or "scope",
                   _text(_setting(config, listener, SUB_CLAIM)) or "sub")


class JwksKeys:
    """The keys of one JWKS URL, fetched at start and refreshed (Kafka's RefreshingHttpsJwks)."""

    def __init__(self, url: str, refresh_ms: int) -> None:
        self.url = url
        self.refresh_ms = refresh_ms
        self.keys: list[tuple[dict[str, Any], jws.PublicKey]] = []
        self.fetches = 0
        self._missing: dict[str, float] = {}  # kid -> monotonic time before which it is not fetched again
        self._tasks: set[asyncio.Task[None]] = set()

    async def _read(self) -> bytes:
        parsed = urlparse(self.url)
        if parsed.scheme.lower() == "file":
            return await asyncio.to_thread(Path(unquote(parsed.path)).read_bytes)
        import aiohttp  # a dependency; loaded only for a JWKS URL

        timeout = aiohttp.ClientTimeout(total=10)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(self.url) as answer:
            if answer.status != 200:
                raise OSError(f"HTTP {answer.status}")
            return await answer.read()

    async def fetch(self) -> None:
        """Fetch and parse the set; OSError/ValueError naming the URL when it cannot."""
        try:
            body = await self._read()
            document = json.loads(body)
        except (TimeoutError, OSError, ValueError) as exc:
            raise ValueError(f"could not fetch the JWKS from {self.url}: {str(exc) or type(exc).__name__}") from None
        except Exception as exc:  # aiohttp's ClientError and kin
            raise ValueError(f"could not fetch the JWKS from {self.url}: {exc}") from None
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise ValueError(f"the JWKS at {self.url} has no \"keys\" list")
        keys = []
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                keys.append((entry, jws.key_from_jwk(entry)))
            except ValueError as exc:
                log.warning("JWKS %s: a key skipped (%s)", self.url, exc)
        self.keys = keys
        self.fetches += 1
        for entry, _key in keys:
            self._missing.pop(str(entry.get("kid")), None)

    async def refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_ms / 1000)
            await self._refresh_logged()

    async def _refresh_logged(self) -> None:
        try:
            await self.fetch()
        except ValueError as exc:
            log.warning("OAuth JWKS refresh encountered an error; not updating local JWKS cache: %s", exc)

    def start_refreshing(self) -> None:
        if self.refresh_ms > 0:
            self._spawn(self.refresh_forever())

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def resolve(self, header: dict[str, Any]) -> jws.PublicKey:
        """The key for a JWS header (its kid, and a key type fitting its alg); InvalidToken, and a background
        refresh, when the set has none."""
        kid, alg = header.get("kid"), str(header.get("alg"))
        for entry, key in self.keys:
            if (kid is None or entry.get("kid") == kid) and entry.get("kty") == jws.key_type(alg) \
                    and entry.get("alg", alg) == alg:
                return key
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # (no loop: unit tests) no refresh
            loop = None
        if loop is not None and isinstance(kid, str) and len(kid) <= 1024:
            if self._missing.get(kid, 0.0) <= loop.time():
                self._missing[kid] = loop.time() + MISSING_KID_BACKOFF_MS / 1000
                self._spawn(self._refresh_logged())
        raise InvalidToken(f"Unable to find a suitable verification key for JWS w/ header "
                           f"{json.dumps(header, separators=(',', ':'))} from JWKs "
                           f"{[str(e.get('kid')) for e, _ in self.keys]} obtained from {self.url}")


class KeySets:
    """Every JWKS a cluster's listeners validate with, one per URL (Kafka's VERIFICATION_KEY_RESOLVER_CACHE)."""

    def __init__(self, default_url: str | None = None) -> None:
        self.by_url: dict[str, JwksKeys] = {}
        self.default_url = default_url  # the cluster's own OIDC provider's JWKS (mockbroker.oidc), if it runs one

    async def start(self, config: Settings, listeners: list[str]) -> None:
        """Check the settings of each SASL listener and fetch the JWKS they name (once per URL); ValueError
        (one line) when a setting is wrong or a JWKS cannot be fetched."""
        for listener in listeners:
            options = SecuredOptions.from_config(config, listener, self.default_url)
            if options is None or options.jwks_url in self.by_url:
                continue
            keys = JwksKeys(options.jwks_url, options.refresh_ms)
            await keys.fetch()
            self.by_url[options.jwks_url] = keys
            keys.start_refreshing()

    def keys_for(self, options: SecuredOptions) -> JwksKeys:
        """The key set of a URL (one named after start, by a changed config, is fetched now, in the background:
        tokens are refused until it is there)."""
        keys = self.by_url.get(options.jwks_url)
        if keys is None:
            keys = self.by_url[options.jwks_url] = JwksKeys(options.jwks_url, options.refresh_ms)
            keys._spawn(keys._refresh_logged())
            keys.start_refreshing()
        return keys

    def close(self) -> None:
        for keys in self.by_url.values():
            keys.close()
        self.by_url.clear()


def _claims_part(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(jws.b64url_decode(part))
    except (ValueError, UnicodeDecodeError):
        raise InvalidToken(f"Could not validate the access token: Unable to parse the JWS {what}") from None
    if not isinstance(value, dict):
        raise InvalidToken(f"Could not validate the access token: the JWS {what} is not a JSON object")
    return value


def _numeric(claims: dict[str, Any], name: str, label: str, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise InvalidToken(f"No {label} ({name}) claim present.")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(f"The value of the '{name}' claim is not the expected type")
    return float(value)


def _check_times(claims: dict[str, Any], options: SecuredOptions, now_ms: int) -> tuple[int, float]:
    """jose4j's NumericDateValidator with Kafka's settings: exp and iat required, the skew either way."""
    exp = _numeric(claims, "exp", "Expiration Time", True)
    iat = _numeric(claims, "iat", "Issued At", True)
    nbf = _numeric(claims, "nbf", "Not Before", False)
    assert exp is not None and iat is not None
    now_s, skew = now_ms / 1000, options.skew_s
    if now_s - skew >= exp:
        raise InvalidToken(f"The JWT is no longer valid - the evaluation time {int(now_s)} is on or after the "
                           f"Expiration Time (exp={int(exp)}) claim value (even when providing {skew} seconds of "
                           "leeway to account for clock skew).")
    if nbf is not None and now_s + skew < nbf:
        raise InvalidToken(f"The JWT is not yet valid as the evaluation time {int(now_s)} is before the Not Before "
                           f"(nbf={int(nbf)}) claim time (even when providing {skew} seconds of leeway to account "
                           "for clock skew).")
    return round(exp * 1000), iat


def _check_audience_and_issuer(claims: dict[str, Any], options: SecuredOptions) -> None:
    if options.audience:
        aud = claims.get("aud")
        if aud is None:
            raise InvalidToken("No Audience (aud) claim present.")
        values = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else None
        if values is None or not any(isinstance(a, str) and a in options.audience for a in values):
            raise InvalidToken(f"Audience (aud) claim {values if values is not None else aud} doesn't contain an "
                               f"acceptable identifier. Expected one of {list(options.audience)} as an aud value.")
    if options.issuer is not None:
        iss = claims.get("iss")
        if iss is None:
            raise InvalidToken(f"No Issuer (iss) claim present but was expecting {options.issuer}")
        if iss != options.issuer:
            raise InvalidToken(f"Issuer (iss) claim value ({iss}) doesn't match expected value of {options.issuer}")


def _scope(claims: dict[str, Any], name: str) -> set[str]:
    raw = claims.get(name)
    values = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    scope: set[str] = set()
    for value in values:
        text = str(value).strip()
        if not text:
            raise InvalidToken(f"{name} value must not contain only whitespace")
        if text in scope:
            raise InvalidToken(f"{name} value must not contain duplicates - {text} already present")
        scope.add(text)
    return scope


def validate_signed(token: str, options: SecuredOptions, keys: JwksKeys, now_ms: int) -> Token:
    """Check a signed token as Kafka's secured validator does; raises InvalidToken with its reason."""
    token = token.strip()
    if not token:
        raise InvalidToken("Empty JWT provided; expected three sections (header, payload, and signature)")
    sections = token.split(".")
    while sections and not sections[-1]:  # Java's split drops trailing empty sections
        sections.pop()
    if len(sections) != 3:
        raise InvalidToken(f"Malformed JWT provided; expected three sections (header, payload, and signature), "
                           f"but {len(sections)} sections provided")
    header = _claims_part(sections[0], "header")
    alg = header.get("alg")
    if alg == "none" or alg is None:
        raise InvalidToken("Could not validate the access token: 'none' is not a permitted algorithm")
    if alg not in jws.ALGORITHMS:
        raise InvalidToken(f"Could not validate the access token: {alg} is an unknown, unsupported or unavailable "
                           "alg algorithm")
    key = keys.resolve(header)
    try:
        signature = jws.b64url_decode(sections[2])
    except ValueError:
        raise InvalidToken("Could not validate the access token: the signature is not Base64url") from None
    if not jws.verify(alg, key, f"{sections[0]}.{sections[1]}".encode(), signature):
        raise InvalidToken(f"Could not validate the access token: JWS signature is invalid: {sections[0]}")
    claims = _claims_part(sections[1], "payload")
    exp_ms, _iat = _check_times(claims, options, now_ms)
    _check_audience_and_issuer(claims, options)
    scope = _scope(claims, options.scope_claim)
    sub = claims.get(options.sub_claim)
    if not isinstance(sub, str) or not sub.strip():
        raise InvalidToken(f"{options.sub_claim} value must be non-null" if sub is None else
                           f"{options.sub_claim} value must not contain only whitespace")
    return Token(sub.strip(), exp_ms, scope)
