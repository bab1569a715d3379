"""KIP-714 client metrics: CLIENT_METRICS (16) config resources and the client instances they reach.

Subscriptions are named config resources with three configs, as Kafka's ClientMetricsConfigs:
``metrics`` (metric name prefixes, ``*`` for all), ``interval.ms`` (default 300000, 100 to 3600000) and
``match`` (``selector=regex`` entries, each regex matching the whole of client_instance_id,
client_id, client_software_name, client_software_version, client_source_address or
client_source_port).  A subscription whose configs are all deleted is gone.

Client instances follow Kafka's ClientMetricsManager: GetTelemetrySubscriptions with the zero Uuid gets
a new instance id; the instance's subscription id is a hash of its matching subscriptions' metrics and
the smallest interval, recomputed on each request so a change of subscriptions makes the old id
unknown.  A push earlier than the interval after the previous one (the first push after a
GetTelemetrySubscriptions is always allowed: clients add jitter) gets THROTTLING_QUOTA_EXCEEDED, as
does a GetTelemetrySubscriptions earlier than the interval after the previous request.  The decoded
metrics of each push are kept per instance (latest values by metric name) for tests to read.
"""

from __future__ import annotations

import re
import secrets
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.ids import uuid_text

METRICS, INTERVAL, MATCH = "metrics", "interval.ms", "match"
DEFAULT_INTERVAL_MS, MIN_INTERVAL_MS, MAX_INTERVAL_MS = 300000, 100, 3600000
CLIENT_METRICS_SOURCE = 7  # DescribeConfigs ConfigSource CLIENT_METRICS_CONFIG
SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
             "client_source_address", "client_source_port")
ALL_METRICS = "*"
# CompressionType ids Kafka accepts for pushes, in its order of preference: zstd, lz4, gzip, snappy
ACCEPTED_COMPRESSION = (4, 3, 1, 2)
LIST_TYPE, INT_TYPE = 7, 3  # DescribeConfigs ConfigType ids
MAX_INSTANCES = 10000  # client instances kept (Kafka expires idle ones from its cache)


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_match(value: str) -> dict[str, re.Pattern[str]]:
    """``match`` entries as selector -> compiled regex; INVALID_CONFIG as Kafka for a bad one."""
    out: dict[str, re.Pattern[str]] = {}
    for entry in value.split(","):
        if not entry.strip():
            continue
        parts = entry.split("=")
        while len(parts) > 2 and parts[-1] == "":
            parts.pop()
        if len(parts) != 2 or parts[0].strip() not in SELECTORS:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {entry}")
        try:
            out[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {entry}") from None
    return out


def validate(name: str, props: Mapping[str, str]) -> None:
    """ClientMetricsConfigs.validate."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in props:
        if key not in (METRICS, INTERVAL, MATCH):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    if INTERVAL in props:
        try:
            interval = int(props[INTERVAL].strip())
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {props[INTERVAL]} for configuration "
                             f"{INTERVAL}: Not a number of type INT") from None
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid value {interval} for {INTERVAL}, interval must be "
                             f"between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    if MATCH in props:
        parse_match(props[MATCH])


@dataclass(slots=True)
class Subscription:
    name: str
    metrics: list[str]
    interval_ms: int
    match: dict[str, re.Pattern[str]]

    @classmethod
    def of(cls, name: str, props: Mapping[str, str]) -> Subscription:
        return cls(name, _split(props.get(METRICS, "")), int(props.get(INTERVAL, DEFAULT_INTERVAL_MS)),
                   parse_match(props.get(MATCH, "")))

    def matches(self, selectors: Mapping[str, str]) -> bool:
        return all(p.fullmatch(selectors.get(k, "")) is not None for k, p in self.match.items())


@dataclass
class ClientInstance:
    instance_id: bytes
    selectors: dict[str, str]
    subscription_id: int = 0
    interval_ms: int = DEFAULT_INTERVAL_MS
    metrics: list[str] = field(default_factory=list)
    last_get_ms: int = -1
    last_push_ms: int = -1
    terminating: bool = False
    last_error: int = 0
    pushes: int = 0
    latest: dict[str, Any] = field(default_factory=dict)  # metric name -> its decoded latest entry
    resource: dict[str, str] = field(default_factory=dict)  # the OTLP resource attributes last pushed

    def summary(self) -> dict[str, Any]:
        return {"client_instance_id": uuid_text(self.instance_id), **self.selectors,
                "subscription_id": self.subscription_id, "push_interval_ms": self.interval_ms,
                "requested_metrics": list(self.metrics), "pushes": self.pushes, "terminating": self.terminating,
                "resource": dict(self.resource), "metrics": dict(self.latest)}


class ClientMetrics:
    """The cluster's subscriptions and client instances."""

    def __init__(self) -> None:
        self.subscriptions: dict[str, dict[str, str]] = {}
        self.instances: dict[bytes, ClientInstance] = {}

    # -- CLIENT_METRICS config resources -----------------------------------------------------------
    def replace(self, name: str, props: Mapping[str, str], validate_only: bool = False) -> None:
        validate(name, props)
        if validate_only:
            return
        if props:
            self.subscriptions[name] = {k: str(v) for k, v in props.items()}
        else:
            self.subscriptions.pop(name, None)

    def props(self, name: str) -> dict[str, str]:
        return dict(self.subscriptions.get(name, {}))

    def describe(self, name: str, keys: Iterable[str] | None) -> list[tuple[str, str, int]]:
        """(name, value, config type) of the configs set on subscription ``name`` (none if unknown)."""
        if not name:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
        wanted = set(keys or ())
        return [(k, v, INT_TYPE if k == INTERVAL else LIST_TYPE)
                for k, v in sorted(self.subscriptions.get(name, {}).items()) if not wanted or k in wanted]

    # -- client instances -----------------------------------------------------------------------------
    def _refresh(self, inst: ClientInstance) -> None:
        subs = [Subscription.of(n, p) for n, p in sorted(self.subscriptions.items())]
        matched = [s for s in subs if s.matches(inst.selectors)]
        metrics: list[str] = []
        for s in matched:
            metrics += [m for m in s.metrics if m not in metrics]
        if ALL_METRICS in metrics:
            metrics = [ALL_METRICS]
        interval = min((s.interval_ms for s in matched), default=DEFAULT_INTERVAL_MS)
        digest = zlib.crc32((",".join(sorted(metrics)) + str(interval)).encode())
        sub_id = (digest ^ zlib.crc32(inst.instance_id)) & 0xFFFFFFFF
        inst.metrics, inst.interval_ms = metrics, interval
        inst.subscription_id = sub_id - (1 << 32) if sub_id >= 1 << 31 else sub_id

    def get_subscriptions(self, instance_id: bytes, selectors: dict[str, str], now_ms: int) -> ClientInstance:
        """GetTelemetrySubscriptions: the client's instance (a new one for the zero Uuid), refreshed."""
        if instance_id == bytes(16):
            instance_id = secrets.token_bytes(16)
            while instance_id in self.instances or instance_id == bytes(16):
                instance_id = secrets.token_bytes(16)
        inst = self.instances.get(instance_id)
        if inst is None:
            inst = ClientInstance(instance_id, {**selectors, "client_instance_id": uuid_text(instance_id)})
            self.instances[instance_id] = inst
            if len(self.instances) > MAX_INSTANCES:  # a long-running broker: forget the oldest client
                del self.instances[next(iter(self.instances))]
        old = inst.subscription_id
        self._refresh(inst)
        last = max(inst.last_get_ms, inst.last_push_ms)
        if (last >= 0 and now_ms - last < inst.interval_ms and old == inst.subscription_id
                and inst.last_error not in (ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)):
            inst.last_error = ErrorCode.THROTTLING_QUOTA_EXCEEDED
            raise KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The request from the client instance was made "
                             "before the push interval")
        inst.last_get_ms, inst.last_error = now_ms, 0
        return inst

    def push(self, instance_id: bytes, subscription_id: int, terminating: bool, compression: int, size: int,
             max_bytes: int, now_ms: int) -> ClientInstance:
        """PushTelemetry's checks, in Kafka's order; the instance whose metrics may then be stored."""
        inst = self.instances.get(instance_id)
        if instance_id == bytes(16) or inst is None:
            raise KafkaError(ErrorCode.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client instance id: "
                             f"{uuid_text(instance_id)}")
        try:
            if inst.terminating:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Client instance is already terminating, further "
                                 "pushes are not accepted")
            old = inst.subscription_id
            self._refresh(inst)
            if subscription_id != inst.subscription_id or old != inst.subscription_id:
                raise KafkaError(ErrorCode.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client subscription id {subscription_id}"
                                 f" for the client {uuid_text(instance_id)}")
            may_push = inst.last_get_ms > inst.last_push_ms or now_ms - inst.last_push_ms >= inst.interval_ms
            if not may_push and not terminating:
                raise KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, f"Request from the client "
                                 f"{uuid_text(instance_id)} arrived before the next push interval time")
            inst.last_push_ms = now_ms
            if terminating:
                inst.terminating = True
            if compression not in ACCEPTED_COMPRESSION and compression != 0:
                raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression type: {compression}")
            if size > max_bytes:
                raise KafkaError(ErrorCode.TELEMETRY_TOO_LARGE, f"Telemetry data is larger than the max bytes "
                                 f"allowed: {size} > {max_bytes}")
        except KafkaError as exc:
            inst.last_error = exc.code
            raise
        inst.last_error = 0
        return inst

    def record(self, inst: ClientInstance, resource: dict[str, str], metrics: Mapping[str, Any]) -> None:
        """Keep a push's decoded metrics: the latest entry of each metric name."""
        inst.pushes += 1
        if resource:
            inst.resource = dict(resource)
        inst.latest.update(metrics)

    def telemetry(self) -> dict[str, dict[str, Any]]:
        """Per client instance id (Kafka's text form): who it is and the latest metrics it pushed."""
        return {uuid_text(i.instance_id): i.summary() for i in self.instances.values()}
