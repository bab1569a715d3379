"""Client quotas: what AlterClientQuotas stores, what DescribeClientQuotas finds, what throttling measures.

An entity maps entity types (``user``, ``client-id``, ``ip``) to a name, ``None`` being the type's
default entity.  Validation follows Kafka's controller (ClientQuotaControlManager): INVALID_REQUEST for
an empty entity, an unknown or repeated type, an empty name, ``ip`` combined with another type, a key
the entity's types do not take, a value that is not above 0, a fraction for an integral key, a key
named twice.  Describe filters follow Kafka's ClientQuotasImage.describe (EXACT / DEFAULT / SPECIFIED
match types, ``strict``).

Enforcement follows Kafka's ClientQuotaManager: the quota that applies to a connection is resolved in
Kafka's order (user+client-id, user+default client-id, user, default user+client-id, default
user+default client-id, default user, client-id, default client-id) and the usage is recorded in a
sensor named after the matched level (so, as in Kafka, all client ids of a user share a user quota).
A sensor is Kafka's Rate over ``quota.window.num`` samples of ``quota.window.size.seconds``, and a
client over its bound is throttled for ``(rate - bound) / bound * window`` milliseconds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError

log = logging.getLogger("mockbroker.quotas")

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

PRODUCE, FETCH, REQUEST, MUTATION = "producer_byte_rate", "consumer_byte_rate", "request_percentage", \
    "controller_mutation_rate"
# key -> integral (Kafka's LONG / INT keys refuse fractions)
USER_CLIENT_KEYS = {PRODUCE: True, FETCH: True, REQUEST: False, MUTATION: False}
IP_KEYS = {"connection_creation_rate": True}
THROTTLING = frozenset((PRODUCE, FETCH, REQUEST))  # the keys the mock enforces (the others are stored only)
_LIMITS = {PRODUCE: 2**63 - 1, FETCH: 2**63 - 1, "connection_creation_rate": 2**31 - 1}

Entity = tuple[tuple[str, str | None], ...]  # sorted (type, name) pairs; name None = the default entity


def entity_key(entity: Mapping[str, str | None] | Iterable[tuple[str, str | None]]) -> Entity:
    items = entity.items() if isinstance(entity, Mapping) else entity
    return tuple(sorted(items, key=lambda kv: kv[0]))


def describe_entity(entity: Entity) -> str:
    return "(" + ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in entity) + ")"


def user_name(principal: str) -> str:
    """The user a quota knows a principal by ("User:alice" -> "alice")."""
    return principal.split(":", 1)[1] if ":" in principal else principal


def _check_entity(entity: Iterable[tuple[str, str | None]]) -> Entity:
    seen: dict[str, str | None] = {}
    for etype, name in entity:
        if etype in seen:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid client quota entity, duplicate entity entry {etype}")
        if etype not in ENTITY_TYPES:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {etype}")
        if name is not None and not name:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Empty {etype} not supported")
        seen[etype] = name
    if not seen:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
    if IP in seen and len(seen) > 1:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         "Invalid quota entity combination, IP entity should not be combined with User or ClientId")
    return entity_key(seen)


def _check_value(keys: Mapping[str, bool], key: str, value: float) -> None:
    if key not in keys:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
    if value <= 0.0:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    if keys[key]:
        if value > _LIMITS[key]:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large.")
        if abs(value % 1.0) > 1e-6:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")


class Rate:
    """Kafka's Rate over a SampledStat (WindowedSum): samples start when a value arrives after the current
    one is a window old; samples idle for ``num`` windows are reset; the elapsed time counts at least
    ``num - 1`` whole windows."""

    __slots__ = ("current", "samples")

    def __init__(self) -> None:
        self.samples: list[list[float]] = []  # [start_ms, last_event_ms, value]
        self.current = 0

    def record(self, value: float, now: int, window_ms: int, num: int) -> None:
        if not self.samples:
            self.samples.append([now, now, 0.0])
        sample = self.samples[self.current]
        if now - sample[0] >= window_ms:
            self.current = (self.current + 1) % (num + 1)
            if self.current >= len(self.samples):
                self.samples.append([now, now, 0.0])
            sample = self.samples[self.current]
            sample[0], sample[1], sample[2] = now, now, 0.0
        sample[2] += value
        sample[1] = now

    def measure(self, now: int, window_ms: int, num: int) -> tuple[float, int]:
        """(rate per second, the window it was measured over in ms)."""
        if not self.samples:
            self.samples.append([now, now, 0.0])
        expire = num * window_ms
        for sample in self.samples:
            if now - sample[1] >= expire:
                sample[0], sample[1], sample[2] = now, now, 0.0
        elapsed = now - min(s[0] for s in self.samples)
        full = elapsed // window_ms
        if full < num - 1:
            elapsed += (num - 1 - full) * window_ms
        window = max(int(elapsed), 1)
        return sum(s[2] for s in self.samples) * 1000 / window, window


class ClientQuotas:
    """The cluster's client quotas and the sensors that measure clients against them."""

    # what the C produce lane reads on every request are slots (native/lanes/member_sites.h); the rest stays in __dict__
    __slots__ = ("__dict__", "__weakref__", "enabled")

    def __init__(self, config: Any, clock: Any) -> None:
        self.config = config
        self.clock = clock
        self.entities: dict[Entity, dict[str, float]] = {}
        self.sensors: dict[tuple[str, str, str], Rate] = {}
        self._resolved: dict[tuple[str, str, str], tuple[tuple[str, str], float] | None] = {}  # until a change
        # True while any throttling key is set for a user or client id: dispatch checks only this
        self.enabled = False

    # -- AlterClientQuotas / DescribeClientQuotas ----------------------------------------------
    def alter(self, entity: Mapping[str, str | None] | Iterable[tuple[str, str | None]],
              ops: Iterable[tuple[str, float | None]], validate_only: bool = False) -> None:
        """Set (value) or remove (None) quota keys of one entity, all or nothing (KafkaError otherwise)."""
        key = _check_entity(entity.items() if isinstance(entity, Mapping) else entity)
        keys = IP_KEYS if key[0][0] == IP else USER_CLIENT_KEYS
        if key[0][0] == IP and key[0][1] is not None:
            _check_ip(key[0][1])
        changes: dict[str, float | None] = {}
        for name, value in ops:
            if name in changes:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Duplicate quota key {name} not updating quota "
                                                            f"for this entity {describe_entity(key)}")
            changes[name] = value
        for name, value in changes.items():
            if value is not None:
                _check_value(keys, name, value)
        if validate_only:
            return
        current = self.entities.setdefault(key, {})
        for name, value in changes.items():
            if value is None:
                current.pop(name, None)
            else:
                current[name] = float(value)
        if not current:
            del self.entities[key]
        log.info("client quotas for %s are now %s", describe_entity(key), current or "unset")
        self._changed()

    def describe(self, components: Iterable[tuple[str, int, str | None]], strict: bool = False
                 ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities matching a filter of (entity type, match type, match) components and their quotas."""
        exact: dict[str, str | None] = {}
        specified: set[str] = set()
        for etype, match_type, match in components:
            if not etype:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
            if etype in exact or etype in specified:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Entity type {etype} cannot appear more than once in the filter.")
            if etype not in ENTITY_TYPES:
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {etype}")
            if match_type == MATCH_EXACT:
                if match is None:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[etype] = match
            elif match_type in (MATCH_DEFAULT, MATCH_SPECIFIED):
                if match is not None:
                    kind = "MATCH_TYPE_DEFAULT" if match_type == MATCH_DEFAULT else "MATCH_TYPE_SPECIFIED"
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     f"Request specified {kind}, but also specified a match string.")
                if match_type == MATCH_DEFAULT:
                    exact[etype] = None
                else:
                    specified.add(etype)
            else:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        named = set(exact) | specified
        if IP in named and (USER in named or CLIENT_ID in named):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP filter "
                                                        "component should not be used with user or clientId filter "
                                                        "component.")
        out = []
        for key, values in self.entities.items():
            names = dict(key)
            if strict and len(names) != len(named):
                continue
            if all(t in names and names[t] == m for t, m in exact.items()) and all(t in names for t in specified):
                out.append((key, dict(values)))
        return out

    def clear(self) -> None:
        self.entities.clear()
        self._changed()

    def _changed(self) -> None:
        self.enabled = any(THROTTLING.intersection(values) for values in self.entities.values())
        self.sensors.clear()  # Kafka re-targets its sensors on a change; starting afresh is simpler
        self._resolved.clear()

    # -- enforcement ---------------------------------------------------------------------------
    def resolve(self, kind: str, user: str, client_id: str) -> tuple[tuple[str, str], float] | None:
        """The sensor tags (user, client-id) and bound for a connection, in Kafka's order, or None."""
        key = (kind, user, client_id)
        if key in self._resolved:
            return self._resolved[key]
        if len(self._resolved) > 10_000:  # many short-lived client ids: forget, do not grow
            self._resolved.clear()
        found = self._resolved[key] = self._resolve(kind, user, client_id)
        return found

    def _resolve(self, kind: str, user: str, client_id: str) -> tuple[tuple[str, str], float] | None:
        ents = self.entities
        order = (
            (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
            (((CLIENT_ID, None), (USER, user)), (user, client_id)),
            (((USER, user),), (user, "")),
            (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
            (((CLIENT_ID, None), (USER, None)), (user, client_id)),
            (((USER, None),), (user, "")),
            (((CLIENT_ID, client_id),), ("", client_id)),
            (((CLIENT_ID, None),), ("", client_id)),
        )
        for key, tags in order:
            values = ents.get(key)
            if values is not None and kind in values:
                return tags, values[kind]
        return None

    def _window(self) -> tuple[int, int]:
        return int(self.config["quota.window.size.seconds"]) * 1000, int(self.config["quota.window.num"])

    def record(self, kind: str, user: str, client_id: str, value: float) -> int:
        """Record ``value`` against the quota that applies; the throttle time in ms (0 within quota)."""
        found = self.resolve(kind, user, client_id)
        if found is None:
            return 0
        tags, bound = found
        rate = self.sensors.get((kind, *tags))
        if rate is None:
            rate = self.sensors[(kind, *tags)] = Rate()
        window_ms, num = self._window()
        now = self.clock.now_ms()
        rate.record(value, now, window_ms, num)
        observed, window = rate.measure(now, window_ms, num)
        if observed <= bound:
            return 0
        throttle = round((observed - bound) / bound * window)
        if kind == REQUEST:
            throttle = min(throttle, window_ms)  # Kafka bounds request-time throttling by one window
        return int(throttle)

    def unrecord(self, kind: str, user: str, client_id: str, value: float) -> None:
        """Take back a recorded value (Kafka does so for a throttled fetch, which then answers nothing)."""
        found = self.resolve(kind, user, client_id)
        rate = self.sensors.get((kind, *found[0])) if found is not None else None
        if rate is not None:
            window_ms, num = self._window()
            rate.record(-value, self.clock.now_ms(), window_ms, num)

    def max_value_in_window(self, kind: str, user: str, client_id: str) -> float | None:
        """The most a client may take at once without certain throttling (Kafka caps fetch sizes at it)."""
        found = self.resolve(kind, user, client_id)
        if found is None:
            return None
        window_ms, num = self._window()
        return found[1] * (num - 1) * window_ms / 1000


def _check_ip(name: str) -> None:
    import ipaddress

    try:
        ipaddress.ip_address(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{name} is not a valid IP or resolvable host.") from None
