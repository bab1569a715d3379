"""A cluster's security settings: its listeners, TLS (SSL and SASL_SSL listeners) and TLS principals.

TLS needs a certificate chain and key: ``ssl_certfile``/``ssl_keyfile`` (PEM), Kafka's
``ssl.keystore.location`` (a PEM file holding the key and the chain, as with ``ssl.keystore.type=PEM``;
``ssl.key.password`` if the key is encrypted), or a ready server-side ``ssl_context`` (then used as it is
on every TLS listener).  Mutual TLS: ``ssl.client.auth`` = ``required`` (or ``requested``: a client may
present one) with the CA in ``ssl_cafile`` / ``ssl.truststore.location``.  As in Kafka (KIP-684) the
broker-wide ``ssl.client.auth`` applies to SSL listeners only; ``listener.name.<listener>.ssl.client.auth``
(the listener name lowercased) sets it for one listener, and is the only way a SASL_SSL listener asks
for client certificates.  A ``listener.name.*`` key naming no listener, or a misspelt suffix of one the
mock reads, is refused with one line naming the nearest valid name.  A client that presents a
certificate on an SSL listener is
``User:<subject DN>``, the DN written as Kafka writes it (Java's X500Principal RFC 2253 form: most
specific RDN first, ``CN=client,OU=eng,O=acme``); without one it is ``User:ANONYMOUS``.  On SASL_SSL
the SASL principal replaces it once the client authenticates.

A client certificate the broker refuses (none given where ``ssl.client.auth=required``, or one no trusted
CA signed) ends the handshake as Kafka's SslTransportLayer ends it: the TLS alert OpenSSL wrote
(``certificate_required``, ``unknown_ca``, ``bad_certificate`` ...) is sent to the client before the
connection closes, and the broker logs one line naming the listener and the reason.  asyncio's (and
uvloop's) TLS protocol closes the socket on a failed handshake without sending what OpenSSL wrote, so the
client met an end of stream instead: :class:`RefusingSSLObject` keeps the failure back until the alert has
gone out (the loop sends pending TLS output when a handshake step asks for more input), and gives it to
the loop on the client's next bytes or its close, which then closes the connection (a client that
neither writes nor closes after the alert is closed by the loop's TLS handshake timeout, 60 s).  This holds for the
contexts the mock makes; a ready ``ssl_context`` is used as given.
"""

from __future__ import annotations

import logging
import re
import ssl
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mockbroker.plain import Slotted
from mockbroker.server.listeners import WILDCARDS, ListenerSpec, broker_port, parse_advertised, parse_listeners

if TYPE_CHECKING:
    from mockbroker.server.oauthbearer_jwks import KeySets
    from mockbroker.state.config import BrokerConfig

    Settings = Mapping[str, Any] | BrokerConfig  # Kafka's settings by name: a dict, or a broker's config

log = logging.getLogger("mockbroker.server")
CLIENT_AUTH = ("none", "requested", "required")
# the listener-prefixed settings the mock reads (listener.name.<listener>.<suffix>)
LISTENER_SUFFIXES = ("ssl.client.auth", "oauthbearer.sasl.jaas.config",
                     # PLAIN's users (user_NAME="password"); SCRAM's login modules name only the broker's own
                     # inter-broker credentials, which a mock without inter-broker traffic never uses
                     "plain.sasl.jaas.config", "scram-sha-256.sasl.jaas.config", "scram-sha-512.sasl.jaas.config",
                     "oauthbearer.sasl.server.callback.handler.class",
                     *(f"oauthbearer.sasl.oauthbearer.{name}" for name in (
                         "jwks.endpoint.url", "jwks.endpoint.refresh.ms", "expected.audience", "expected.issuer",
                         "clock.skew.seconds", "scope.claim.name", "sub.claim.name")))
_RFC2253_KEYWORDS = {"2.5.4.3", "2.5.4.6", "2.5.4.7", "2.5.4.8", "2.5.4.10", "2.5.4.11", "2.5.4.9",
                     "0.9.2342.19200300.100.1.25", "0.9.2342.19200300.100.1.1"}  # CN C L ST O OU STREET DC UID


class Security(Slotted):
    """What every broker of a cluster listens on and with which TLS settings."""

    __slots__ = ("advertised", "contexts", "default_jwks_url", "key_sets", "listeners", "ssl_context")

    def __init__(self, listeners: list[ListenerSpec], advertised: dict[str, tuple[str, int]] | None = None,
                 ssl_context: ssl.SSLContext | None = None,
                 contexts: dict[str, ssl.SSLContext] | None = None) -> None:
        self.listeners = listeners
        self.advertised: dict[str, tuple[str, int]] = {} if advertised is None else advertised
        self.ssl_context = ssl_context  # the first TLS listener's (or the one given)
        self.contexts: dict[str, ssl.SSLContext] = {} if contexts is None else contexts  # by listener name
        # the JWKS that signed OAUTHBEARER tokens are checked with (server.oauthbearer_jwks), made on first use
        self.key_sets: KeySets | None = None
        self.default_jwks_url: str | None = None  # the JWKS of the cluster's own OIDC provider (mockbroker.oidc)

    async def start_key_sets(self, config: Settings) -> KeySets | None:
        """Fetch the JWKS of every SASL listener that validates signed OAUTHBEARER tokens (once per URL: the
        first broker to start fetches, the others find it); ValueError (one line) when one cannot be."""
        names = [s.name for s in self.listeners if s.uses_sasl]
        mechanisms = str(config.get("sasl.enabled.mechanisms") or "").upper()
        if not names or "OAUTHBEARER" not in mechanisms:
            return self.key_sets
        from mockbroker.server.oauthbearer_jwks import KeySets  # only for an OAUTHBEARER listener

        if self.key_sets is None:
            self.key_sets = KeySets(self.default_jwks_url)
        await self.key_sets.start(config, names)
        return self.key_sets

    def close_key_sets(self) -> None:
        if self.key_sets is not None:
            self.key_sets.close()
            self.key_sets = None

    def context_for(self, spec: ListenerSpec) -> ssl.SSLContext | None:
        """The server TLS context of a listener (None: plain TCP)."""
        if not spec.uses_ssl:
            return None
        return self.contexts.get(spec.name, self.ssl_context)

    @classmethod
    def from_options(cls, config: Settings, host: str, port: int, *,
                     ssl_context: ssl.SSLContext | None = None, ssl_certfile: str | None = None,
                     ssl_keyfile: str | None = None, ssl_cafile: str | None = None,
                     ssl_client_auth: str | None = None, ssl_password: str | None = None) -> Security:
        """Listeners from ``listeners`` / ``listener.security.protocol.map`` / ``advertised.listeners`` in
        ``config`` (default: one PLAINTEXT listener on ``host:port``) and TLS from the arguments or
        Kafka's ``ssl.*`` names."""
        listeners = parse_listeners(config.get("listeners"), config.get("listener.security.protocol.map"),
                                    host, port)
        listeners = [ListenerSpec(s.name, s.protocol, s.host or host, s.port) for s in listeners]
        advertised = parse_advertised(config.get("advertised.listeners"), listeners)
        check_listener_keys(config, listeners)
        contexts: dict[str, ssl.SSLContext] = {}
        if ssl_context is None:
            broker_wide = str(ssl_client_auth or config.get("ssl.client.auth") or "none").strip().lower()
            if broker_wide not in CLIENT_AUTH:  # refused even when no SSL listener reads it
                raise ValueError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH)}, not {broker_wide!r}")
            for spec in listeners:  # one context per listener: a refused handshake's log line names it
                if not spec.uses_ssl:
                    continue
                contexts[spec.name] = server_ssl_context(
                    ssl_certfile or config.get("ssl.keystore.location"), ssl_keyfile,
                    ssl_cafile or config.get("ssl.truststore.location"),
                    listener_client_auth(config, spec, broker_wide), ssl_password or config.get("ssl.key.password"),
                    listener=spec.name)
            ssl_context = next(iter(contexts.values()), None)
        return cls(listeners, advertised, ssl_context, contexts)

    def endpoints(self, node_id: int, bound: Mapping[str, int], advertised_host: str,
                  host_given: bool = False) -> dict[str, tuple[str, int]]:
        """Listener name -> (host, port) that broker ``node_id`` advertises.  A listener without an
        ``advertised.listeners`` entry advertises ``advertised_host`` when that was given (the mock's
        --advertised-host) or when it listens on a wildcard address, else its own host."""
        out = {}
        for spec in self.listeners:
            host, port = self.advertised.get(spec.name, ("", 0))
            if port:
                port = broker_port(ListenerSpec(spec.name, spec.protocol, host, port), node_id)
            else:
                port = bound[spec.name]
            if host in WILDCARDS:
                host = advertised_host if host_given or spec.host in WILDCARDS else spec.host
            out[spec.name] = (host, port)
        return out


def listener_client_auth(config: Settings, spec: ListenerSpec, broker_wide: str) -> str:
    """KIP-684: ``listener.name.<listener>.ssl.client.auth`` when set; else the broker-wide
    ``ssl.client.auth`` on SSL listeners and ``none`` on SASL_SSL ones."""
    key = f"listener.name.{spec.name.lower()}.ssl.client.auth"
    value = config.get(key)
    if value is None or not str(value).strip():
        return broker_wide if spec.protocol == "SSL" else "none"
    mode = str(value).strip().lower()
    if mode not in CLIENT_AUTH:
        raise ValueError(f"{key} must be one of {', '.join(CLIENT_AUTH)}, not {value!r}")
    return mode


def check_listener_keys(config: Settings, listeners: list[ListenerSpec]) -> None:
    """A ``listener.name.<listener>.<setting>`` key must name a listener; a setting close to one the
    mock reads (a typo) is refused naming it.  Other Kafka per-listener settings pass, unread."""
    given = config if isinstance(config, Mapping) else config.values  # a dict, or a BrokerConfig's values
    keys = [k for k in given if isinstance(k, str) and k.startswith("listener.name.")]
    if not keys:
        return
    import difflib  # loaded only when such keys are given

    names = [s.name.lower() for s in listeners]
    for key in keys:
        listener, _, suffix = key[len("listener.name."):].partition(".")
        if listener not in names:
            near = difflib.get_close_matches(listener, names, 1, 0.0)
            raise ValueError(f"unknown config {key}: no listener {listener!r} (listener names are lowercased; "
                             f"did you mean listener.name.{near[0]}.{suffix}?)" if near else
                             f"unknown config {key}: no listener {listener!r}")
        if suffix not in LISTENER_SUFFIXES:
            near = difflib.get_close_matches(suffix, LISTENER_SUFFIXES, 1, 0.8)
            if near:
                raise ValueError(f"unknown config {key}: did you mean listener.name.{listener}.{near[0]}?")


# PlainLoginModule's user list: user_NAME="password" (Kafka user names may hold dashes and dots)
_PLAIN_USER = re.compile(r'\buser_([^\s=;"]+)\s*=\s*(?:"([^"]*)"|([^\s;"]+))')


def plain_users(jaas: str) -> dict[str, str]:
    """The ``user_NAME="password"`` options of a JAAS text (a PlainLoginModule entry): name -> password."""
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in _PLAIN_USER.finditer(jaas)}


def jaas_plain_users(config: Settings) -> dict[str, str]:
    """The PLAIN users of every ``listener.name.<listener>.plain.sasl.jaas.config`` (PlainLoginModule's
    ``user_NAME="password"`` options, Kafka's own way to list them).  The mock keeps one user list for the
    cluster: a user listed for one listener may authenticate on every SASL listener."""
    given = config if isinstance(config, Mapping) else config.values
    users: dict[str, str] = {}
    for key, value in given.items():
        if isinstance(key, str) and key.startswith("listener.name.") and key.endswith(".plain.sasl.jaas.config"):
            users.update(plain_users(str(value)))
    return users


_OPENSSL_TEXT = re.compile(r"^\[[^\]]*\] (?P<text>.*?)(?: \(_ssl\.c:\d+\))?$")


def handshake_failure_reason(exc: ssl.SSLError) -> str:
    """OpenSSL's words for a failed handshake, without the library and source tags."""
    verify = getattr(exc, "verify_message", None)
    if verify:
        return f"certificate verify failed: {verify}"
    text = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    match = _OPENSSL_TEXT.match(text)
    return match.group("text") if match else text


class RefusingSSLObject(ssl.SSLObject):
    """A server-side TLS object whose failed handshake lets the alert out first (see the module text)."""

    _refused: ssl.SSLError | None = None
    _outgoing: ssl.MemoryBIO | None = None

    @classmethod
    def _create(cls, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO, *args: Any, **kwargs: Any) -> Any:
        made = super()._create(incoming, outgoing, *args, **kwargs)  # type: ignore[misc]
        made._outgoing = outgoing  # what OpenSSL wrote and the loop has not sent yet
        return made

    def do_handshake(self) -> None:
        if self._refused is not None:  # the alert went out: now the loop closes the connection
            raise self._refused
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise
        except ssl.SSLError as exc:
            listener = getattr(self.context, "listener", None) or "?"
            log.info("Failed authentication on listener %s (SSL handshake failed: %s)", listener,
                     handshake_failure_reason(exc))
            if self._outgoing is None or not self._outgoing.pending:
                raise  # no alert to send (bytes that are not TLS): closed at once, as before
            self._refused = exc
            raise ssl.SSLWantReadError("the handshake failed: its alert is sent first") from None


class ListenerSSLContext(ssl.SSLContext):
    """The server TLS context of one listener (its name, for the log)."""

    sslobject_class = RefusingSSLObject
    listener = ""


def server_ssl_context(certfile: str | None, keyfile: str | None = None, cafile: str | None = None,
                       client_auth: str = "none", password: str | None = None,
                       listener: str = "") -> ssl.SSLContext:
    """A server-side TLS context from PEM files (``certfile`` may hold the key too)."""
    if not certfile:
        raise ValueError("an SSL or SASL_SSL listener needs a certificate: ssl_certfile (and ssl_keyfile), "
                         "ssl.keystore.location or ssl_context")
    client_auth = client_auth.strip().lower()
    if client_auth not in CLIENT_AUTH:
        raise ValueError(f"ssl.client.auth must be one of {', '.join(CLIENT_AUTH)}, not {client_auth!r}")
    context = ListenerSSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.listener = listener
    try:
        context.load_cert_chain(certfile, keyfile, password)
    except (OSError, ssl.SSLError) as exc:  # (ssl.SSLError is an OSError: named apart for the reader)
        raise ValueError(_unreadable("certificate chain and key", certfile, exc)) from None
    if cafile:
        try:
            context.load_verify_locations(cafile)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(_unreadable("CA certificates", cafile, exc)) from None
    if client_auth != "none":
        if not cafile:
            raise ValueError(f"ssl.client.auth={client_auth} needs the clients' CA (ssl_cafile or "
                             "ssl.truststore.location)")
        context.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    return context


def _unreadable(what: str, path: str, exc: OSError) -> str:
    """One line: which TLS file could not be read and why (a Java keystore is named as such: PEM is read)."""
    if isinstance(exc, FileNotFoundError):
        return f"TLS {what} {path}: no such file"
    java = path.lower().endswith((".jks", ".p12", ".pfx", ".keystore", ".truststore"))
    hint = " (a Java keystore? the mock reads PEM files, as Kafka's ssl.keystore.type=PEM)" if java else ""
    return f"TLS {what} {path}: not readable as PEM{hint}: {exc.strerror or exc}"


def ssl_principal(transport: Any) -> str | None:
    """``User:<DN>`` of the client certificate on a TLS transport, or None when there is none."""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    return "User:" + distinguished_name(der)


def distinguished_name(der: bytes) -> str:
    """A certificate subject as Java's X500Principal.getName() (RFC 2253) writes it."""
    from cryptography import x509

    subject = x509.load_der_x509_certificate(der).subject
    rdns = []
    for rdn in reversed(subject.rdns):
        parts = []
        for attr in rdn:
            if attr.oid.dotted_string in _RFC2253_KEYWORDS:
                parts.append(attr.rfc4514_string())
            else:  # Java writes other attribute types as OID=#<DER of the value>
                raw = attr.value.encode() if isinstance(attr.value, str) else bytes(attr.value)
                tag = attr._type.value if hasattr(attr, "_type") else 12
                parts.append(f"{attr.oid.dotted_string}=#{bytes([tag, len(raw)]).hex()}{raw.hex()}")
        rdns.append("+".join(parts))
    return ",".join(rdns)
