"""SASL/OAUTHBEARER (KIP-255) as Kafka's default unsecured validator checks it (signed tokens, checked
against a JWKS when ``sasl.oauthbearer.jwks.endpoint.url`` is set: mockbroker.server.oauthbearer_jwks).

The client's one message is RFC 7628's GS2 form, ``n,[a=authzid],\\x01auth=Bearer <token>\\x01[key=value\\x01]*\\x01``
(Kafka's OAuthBearerClientInitialResponse); anything else fails with Kafka's generic "invalid credentials"
message.  The token is an unsecured JWS (``{"alg":"none"}``, a JSON payload, an empty signature), checked
as OAuthBearerUnsecuredJws and OAuthBearerUnsecuredValidatorCallbackHandler check it: the principal claim
(``sub``) must be a non-blank string, ``exp`` a number, ``iat`` (when present) a number not after now plus
the allowed clock skew, ``exp`` after now minus the skew and after ``iat``, and every required scope in the
scope claim (a string: one scope; a list: several).  A token that fails is answered with Kafka's error
challenge, ``{"status":"invalid_token"}`` (``{"status":"insufficient_scope", "scope":"<missing>"}`` for a
missing scope); the client answers ``\\x01`` and the broker then fails the authentication with that JSON as
the SASL_AUTHENTICATION_FAILED message.  An authzid must equal the token's principal.  SASL extensions are
accepted and ignored (the unsecured validator does not look at them).

Options (Kafka sets them as JAAS options of OAuthBearerLoginModule; the mock reads them from
``listener.name.<listener>.oauthbearer.sasl.jaas.config`` when that is set, else from its own keys):

====================================== =========================================== =======
JAAS option                            mock key                                    default
====================================== =========================================== =======
unsecuredValidatorPrincipalClaimName   mock.oauthbearer.principal.claim.name       sub
unsecuredValidatorScopeClaimName       mock.oauthbearer.scope.claim.name           scope
unsecuredValidatorRequiredScope        mock.oauthbearer.required.scope             (none)
unsecuredValidatorAllowableClockSkewMs mock.oauthbearer.allowable.clock.skew.ms    0
====================================== =========================================== =======

The token's ``exp`` is the credential's lifetime: the SASL session lasts until then, or
``connections.max.reauth.ms`` when that is shorter (KIP-368, as Kafka's SaslServerAuthenticator).
Tokens are never logged.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import TYPE_CHECKING, Any

from mockbroker.plain import Slotted

if TYPE_CHECKING:
    from mockbroker.server.oauthbearer_jwks import JwksKeys, SecuredOptions
    from mockbroker.server.security import Settings

MECHANISM = "OAUTHBEARER"
INVALID_FIRST_MESSAGE = ("Authentication failed during authentication due to invalid credentials with SASL "
                         "mechanism OAUTHBEARER")
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"  # no bare "," or "="
_FIRST_MESSAGE = re.compile(r"n,(?:a=(?P<authzid>" + _SASLNAME + r"))?,\x01(?P<pairs>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+"
                            r"\x01)*)\x01", re.DOTALL)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"([^"]*)"|([^\s;"]+))')
OPTIONS = {  # JAAS option -> (mock key, default)
    "unsecuredValidatorPrincipalClaimName": ("mock.oauthbearer.principal.claim.name", "sub"),
    "unsecuredValidatorScopeClaimName": ("mock.oauthbearer.scope.claim.name", "scope"),
    "unsecuredValidatorRequiredScope": ("mock.oauthbearer.required.scope", ""),
    "unsecuredValidatorAllowableClockSkewMs": ("mock.oauthbearer.allowable.clock.skew.ms", "0"),
}


class InvalidToken(Exception):
    """The validator refused the token: ``status`` (invalid_token / insufficient_scope), ``scope`` (the
    missing one) and the reason (logged, never sent: Kafka sends only the JSON)."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope

    def challenge(self) -> str:
        """Kafka's jsonErrorResponse, byte for byte."""
        if self.scope is None:
            return '{"status":"invalid_token"}'
        return '{"status":"insufficient_scope", "scope":"' + self.scope + '"}'


class ValidatorOptions(Slotted):
    """The unsecured validator's options for one listener."""

    __slots__ = ("principal_claim", "required_scope", "scope_claim", "skew_ms")

    def __init__(self, principal_claim: str = "sub", scope_claim: str = "scope", required_scope: str = "",
                 skew_ms: int = 0) -> None:
        self.principal_claim = principal_claim.strip() or "sub"
        self.scope_claim = scope_claim.strip() or "scope"
        self.required_scope = [s for s in required_scope.split() if s]
        self.skew_ms = skew_ms

    @classmethod
    def from_config(cls, config: Settings, listener: str = "") -> ValidatorOptions:
        """From ``listener.name.<listener>.oauthbearer.sasl.jaas.config``'s options, else the mock keys."""
        jaas = jaas_options(config.get(f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config"))
        values = {}
        for option, (key, default) in OPTIONS.items():
            value = jaas.get(option)
            values[option] = str(value if value is not None else config.get(key, default) or default)
        skew_text = values["unsecuredValidatorAllowableClockSkewMs"].strip()
        try:
            skew = int(skew_text)
        except ValueError:
            raise ValueError("unsecuredValidatorAllowableClockSkewMs must be a number of ms, "
                             f"not {skew_text!r}") from None
        if skew < 0:
            raise ValueError(f"unsecuredValidatorAllowableClockSkewMs must not be negative, not {skew}")
        return cls(values["unsecuredValidatorPrincipalClaimName"], values["unsecuredValidatorScopeClaimName"],
                   values["unsecuredValidatorRequiredScope"], skew)


def jaas_options(text: Any) -> dict[str, str]:
    """The ``name="value"`` options of a JAAS line (``LoginModule required a="1" b="2";``)."""
    if not text:
        return {}
    body = str(text).split(" required", 1)[-1] if " required" in str(text) else str(text)
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in _JAAS_OPTION.finditer(body)}


def parse_client_first(message: bytes) -> tuple[str, str]:
    """(authzid, token) of a client's first message; ValueError with Kafka's reason when it is not one."""
    try:
        text = message.decode()
    except UnicodeDecodeError:
        raise ValueError("Invalid OAUTHBEARER client first message") from None
    match = _FIRST_MESSAGE.fullmatch(text)
    if match is None:
        raise ValueError("Invalid OAUTHBEARER client first message")
    pairs = {}
    for pair in match.group("pairs").split("\x01")[:-1]:
        key, _, value = pair.partition("=")
        pairs[key] = value
    auth = _AUTH.fullmatch(pairs.get("auth", ""))
    if auth is None:
        raise ValueError("Invalid OAUTHBEARER client first message")
    if auth.group("scheme").lower() != "bearer":
        raise ValueError(f"Invalid scheme in OAUTHBEARER client first message: {auth.group('scheme')}")
    authzid = (match.group("authzid") or "").replace("=2C", ",").replace("=3D", "=")
    return authzid, auth.group("token")


def _decode_part(part: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed Base64 URL encoded value") from None
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise InvalidToken("malformed JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken("malformed JSON")
    return value


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(f"The '{name}' claim was not of type Number: {type(value).__name__}")
    return float(value)


def _scope(claims: dict[str, Any], name: str) -> set[str]:
    value = claims.get(name)
    if value is None:
        return set()
    if isinstance(value, str):
        return {value.strip()} if value.strip() else set()
    if isinstance(value, list):
        return {str(s).strip() for s in value if str(s).strip()}
    raise InvalidToken(f"The '{name}' claim was not of type List: {type(value).__name__}")


class Token(Slotted):
    """A token that passed: its principal name and expiry (ms since the epoch)."""

    __slots__ = ("expires_at_ms", "principal", "scope")

    def __init__(self, principal: str, expires_at_ms: int, scope: set[str]) -> None:
        self.principal = principal
        self.expires_at_ms = expires_at_ms
        self.scope = scope


def validate(token: str, options: ValidatorOptions, now_ms: int) -> Token:
    """Check an unsecured JWS as Kafka's unsecured validator does; raises InvalidToken."""
    if ".." in token:
        raise InvalidToken("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
    header, claims = _decode_part(parts[0]), _decode_part(parts[1])
    if "alg" not in header:
        raise InvalidToken("JWS header must have an Algorithm value")
    if str(header["alg"]) != "none":
        raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise InvalidToken("Unsecured JWS must not contain a digital signature")
    scope = _scope(claims, options.scope_claim)
    exp = _number(claims, "exp")
    if exp is None:
        raise InvalidToken("No expiration time in JWT")
    principal = claims.get(options.principal_claim)
    if principal is not None and not isinstance(principal, str):
        raise InvalidToken(f"The '{options.principal_claim}' claim was not of type String: {type(principal).__name__}")
    if not principal or not principal.strip():
        raise InvalidToken("No principal name in JWT claim: " + options.principal_claim)
    iat = _number(claims, "iat")
    exp_ms, skew = round(exp * 1000), options.skew_ms
    if iat is not None and round(iat * 1000) > now_ms + skew:
        raise InvalidToken(f"The Issued At value ({iat} seconds) was after the indicated time ({now_ms / 1000} "
                           f"seconds) plus allowable clock skew ({skew / 1000} seconds)")
    if now_ms - skew >= exp_ms:
        raise InvalidToken(f"The indicated time ({now_ms / 1000} seconds) minus allowable clock skew "
                           f"({skew / 1000} seconds) was on or after the Expiration Time value ({exp} seconds)")
    if iat is not None and exp_ms <= round(iat * 1000):
        raise InvalidToken(f"The Expiration Time time ({exp} seconds) was not after the Issued At time ({iat} seconds)")
    for required in options.required_scope:
        if required not in scope:
            raise InvalidToken(f"The provided scope ({sorted(scope)}) was missing a required scope ({required}).  "
                               f"All required scope elements: {options.required_scope}", required)
    return Token(principal, exp_ms, scope)


class OAuthBearerServer:
    """Kafka's OAuthBearerSaslServer: one client message; a refused token gets the JSON error challenge,
    and the client's ``\\x01`` after it fails the exchange with that JSON."""

    mechanism = MECHANISM

    def __init__(self, options: ValidatorOptions, secured: SecuredOptions | None = None,
                 keys: JwksKeys | None = None) -> None:
        self.options = options
        self.secured = secured  # Kafka's secured validator (server.oauthbearer_jwks), else the unsecured one
        self.keys = keys
        self.user: str | None = None
        self.expires_at_ms: int | None = None  # the credential's lifetime (KIP-368)
        self.now_ms = 0  # set by the session before each step
        self.error: str | None = None
        self.reason = ""  # why the last token was refused (for the broker's log)

    def step(self, message: bytes) -> tuple[bool, bytes]:
        from mockbroker.handlers.sasl_common import SaslFailure

        if message == b"\x01" and self.error is not None:
            raise SaslFailure(self.error)
        self.error = None
        try:
            authzid, token_value = parse_client_first(message)
        except ValueError:
            raise SaslFailure(INVALID_FIRST_MESSAGE) from None
        try:
            if self.secured is None:
                token = validate(token_value, self.options, self.now_ms)
            else:
                from mockbroker.server.oauthbearer_jwks import validate_signed

                if self.keys is None:
                    raise InvalidToken(f"no key set for {self.secured.jwks_url}")
                token = validate_signed(token_value, self.secured, self.keys, self.now_ms)
        except InvalidToken as exc:
            self.error, self.reason = exc.challenge(), str(exc)
            return False, self.error.encode()
        if authzid and authzid != token.principal:
            raise SaslFailure(f"Authentication failed: Client requested an authorization id ({authzid}) that is "
                              f"different from the token's principal name ({token.principal})")
        self.user = token.principal
        self.expires_at_ms = token.expires_at_ms
        return True, b""


def unsecured_jwt(claims: dict[str, Any]) -> str:
    """An unsecured JWS (``alg`` none) carrying ``claims``: what clients' unsecured token providers build."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return part({"alg": "none"}) + "." + part(claims) + "."


def client_first_message(token: str, authzid: str = "", extensions: dict[str, str] | None = None) -> bytes:
    """RFC 7628's client message carrying ``token`` (for tests and tools)."""
    extra = "".join(f"{k}={v}\x01" for k, v in (extensions or {}).items())
    gs2 = "n," + (f"a={authzid.replace('=', '=3D').replace(',', '=2C')}" if authzid else "") + ","
    return (gs2 + "\x01auth=Bearer " + token + "\x01" + extra + "\x01").encode()
