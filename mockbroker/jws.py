"""Signed JWTs (JWS compact serialization, RFC 7515) and public keys as JWKs (RFC 7517), over ``cryptography``.

What the broker's OAUTHBEARER validator (mockbroker.server.oauthbearer_jwks) needs to check a signature with a
key from a JWKS, and what the mock OIDC provider (mockbroker.oidc) needs to sign tokens and publish its keys:
RS256/384/512, PS256/384/512 (RSA) and ES256/384/512 (EC P-256/384/521), the algorithms Kafka's validator
(jose4j) accepts from a JWKS.  No I/O.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
_HASHES: dict[str, type[hashes.SHA256 | hashes.SHA384 | hashes.SHA512]] = {
    "256": hashes.SHA256, "384": hashes.SHA384, "512": hashes.SHA512}
_CURVES = {"P-256": (ec.SECP256R1, 32, "ES256"), "P-384": (ec.SECP384R1, 48, "ES384"),
           "P-521": (ec.SECP521R1, 66, "ES512")}
_CURVE_OF_ALG = {alg: name for name, (_, _, alg) in _CURVES.items()}
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    """Base64url without padding; ValueError when it is not."""
    if not isinstance(text, str) or any(c in text for c in "+/= \n"):
        raise ValueError("not a Base64url value")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _uint(value: str) -> int:
    return int.from_bytes(b64url_decode(value), "big")


def key_type(alg: str) -> str:
    """The JWK ``kty`` an algorithm signs with (RSA or EC)."""
    return "EC" if alg.startswith("ES") else "RSA"


def new_private_key(alg: str) -> PrivateKey:
    """A fresh key for ``alg`` (RSA 2048, or the algorithm's curve)."""
    if alg not in ALGORITHMS:
        raise ValueError(f"unsupported algorithm {alg!r} (one of {', '.join(ALGORITHMS)})")
    if key_type(alg) == "EC":
        return ec.generate_private_key(_CURVES[_CURVE_OF_ALG[alg]][0]())
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key: PublicKey, kid: str, alg: str) -> dict[str, str]:
    """The JWK of a public key, as a JWKS publishes it."""
    if isinstance(key, rsa.RSAPublicKey):
        numbers = key.public_numbers()
        return {"kty": "RSA", "kid": kid, "use": "sig", "alg": alg,
                "n": b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
                "e": b64url(numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big"))}
    curve = _CURVE_OF_ALG[alg]
    size = _CURVES[curve][1]
    point = key.public_numbers()
    return {"kty": "EC", "kid": kid, "use": "sig", "alg": alg, "crv": curve,
            "x": b64url(point.x.to_bytes(size, "big")), "y": b64url(point.y.to_bytes(size, "big"))}


def key_from_jwk(jwk: dict[str, Any]) -> PublicKey:
    """The public key of a JWK; ValueError naming what is wrong."""
    kty = jwk.get("kty")
    try:
        if kty == "RSA":
            return rsa.RSAPublicNumbers(_uint(jwk["e"]), _uint(jwk["n"])).public_key()
        if kty == "EC":
            curve = _CURVES.get(jwk.get("crv", ""))
            if curve is None:
                raise ValueError(f"unsupported EC curve {jwk.get('crv')!r}")
            return ec.EllipticCurvePublicNumbers(_uint(jwk["x"]), _uint(jwk["y"]), curve[0]()).public_key()
    except KeyError as exc:
        raise ValueError(f"{kty} JWK without {exc.args[0]!r}") from None
    raise ValueError(f"unsupported key type {kty!r}")


def sign(alg: str, key: PrivateKey, data: bytes) -> bytes:
    digest = _HASHES[alg[2:]]()
    if isinstance(key, ec.EllipticCurvePrivateKey):
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(digest)))
        size = _CURVES[_CURVE_OF_ALG[alg]][1]
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")  # JWS: r || s, not DER
    if alg.startswith("PS"):
        return key.sign(data, padding.PSS(padding.MGF1(digest), digest.digest_size), digest)
    return key.sign(data, padding.PKCS1v15(), digest)


def verify(alg: str, key: PublicKey, data: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is ``key``'s signature of ``data`` with ``alg`` (False for a key of another type)."""
    digest = _HASHES[alg[2:]]()
    try:
        if alg.startswith("ES"):
            if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != _CURVES[_CURVE_OF_ALG[alg]][0].name:
                return False
            size = _CURVES[_CURVE_OF_ALG[alg]][1]
            if len(signature) != 2 * size:
                return False
            r, s = int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big")
            key.verify(encode_dss_signature(r, s), data, ec.ECDSA(digest))
        elif not isinstance(key, rsa.RSAPublicKey):
            return False
        elif alg.startswith("PS"):
            key.verify(signature, data, padding.PSS(padding.MGF1(digest), digest.digest_size), digest)
        else:
            key.verify(signature, data, padding.PKCS1v15(), digest)
    except InvalidSignature:
        return False
    return True


def encode(header: dict[str, Any], claims: dict[str, Any], key: PrivateKey) -> str:
    """A signed JWT: ``header`` (with its ``alg``) and ``claims``, signed by ``key``."""
    signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "."
                     + b64url(json.dumps(claims, separators=(",", ":")).encode()))
    return signing_input + "." + b64url(sign(header["alg"], key, signing_input.encode()))
