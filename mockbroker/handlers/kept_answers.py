"""Answers kept for requests that repeat byte for byte, written by the C staging lane.

Every producer and consumer asks Metadata for its topics on each connection it opens, in the same
bytes each time; through dispatch such a request is ~40 us of Python (decode, journal, handler,
encode).  The staging lane (native/lanes/kept_answers.h) looks the request up in the cluster's
``kept_answers`` by (api key, version, the connection's listener, the body's bytes) and writes the kept
answer with the request's correlation id, filing the journal entry dispatch would, without a Python
call; consumers ask FindCoordinator for their group the same way.  An entry is good while its API's
count in mockbroker.state.answer_epoch (Metadata: every change to topics, partitions, leaders,
replicas, live brokers and the controller; FindCoordinator: live brokers and pinned coordinators)
and the broker config's generation stay what they were when it was made.

:func:`answer` is what the lane calls for a request it has no current entry for: it decodes the body
and runs the handler as dispatch would, but only for a request its API's ``ordinary`` check (registered
with :func:`keep`) accepts: one answered without side effects or errors (Metadata: every named topic
exists, so nothing is auto-created).  Anything else is left to dispatch (None).  The lane itself runs
only while nothing else must see the request: borrow() answers kept answers (and ApiVersions) under the
broker and connection state of the produce lane, produce_lane.usual_for (no fault rules, quotas, ACLs,
network partition, SASL or drop hook; C reads the same declaration: native/lanes/lane_usual.h), and
neither has broker-state conditions of its own; what else makes such a request usual is its bytes
(kept_answers.h, api_versions_staging.h) and its API's ``ordinary`` check here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mockbroker.codec_errors import CodecError
from mockbroker.faults.facts import journal_about, response_error_codes
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import HANDLERS, handler_for
from mockbroker.protocol import api
from mockbroker.state.answer_epoch import BROKERS, EPOCH, AnswerEpoch

if TYPE_CHECKING:
    from mockbroker.server.broker import BrokerServer
    from mockbroker.server.connection import Connection
    from mockbroker.state.cluster import ClusterState

# what the lane looks up, with the count its answers depend on: Metadata, FindCoordinator (each handler
# module registers its check with keep)
KEPT_APIS: dict[int, AnswerEpoch] = {3: EPOCH, 10: BROKERS}
KEPT_ENTRIES = 64  # per cluster: the dict starts afresh when full
KEPT_ANSWER_BYTES = 64 << 10  # larger answers (many topics) are answered but not kept
# api key -> ordinary(cluster, version, request body) -> True when answering it changes nothing and
# gives no error (its answer may be kept)
ORDINARY: dict[int, Callable[[Any, int, Any], bool]] = {}


def keep(api_key: int) -> Callable[[Callable[[Any, int, Any], bool]], Callable[[Any, int, Any], bool]]:
    """Register an API's ``ordinary`` check: its ordinary requests' answers are kept."""

    def register(check: Callable[[Any, int, Any], bool]) -> Callable[[Any, int, Any], bool]:
        ORDINARY[api_key] = check
        return check

    return register


def answer(broker: BrokerServer, conn: Connection, api_key: int, version: int, correlation_id: int,
           client_id: str | None, body: bytes) -> tuple[Any, ...] | None:
    """The entry for a request the lane has no current one for: (its API's count, config generation, the answer
    frame with correlation id 0, the journal's about, the error codes), kept in the cluster's
    ``kept_answers`` when nothing changed while it was made; None leaves the request to dispatch (and
    an entry without a frame, kept, tells the lane to leave equal requests there too while current).
    The lane calls it through mockbroker.server.dispatch, which starts the process's warm-up first."""
    cluster = broker.cluster
    counter = KEPT_APIS[api_key]
    epoch, generation = counter.value, cluster.config.generation
    key = (api_key, version, conn.listener, body)
    request = _ordinary(cluster, api_key, version, body)
    if request is None:  # dispatch's, and so are equal requests until something changes
        _keep(cluster, key, (epoch, generation, None, None, None))
        return None
    ctx = RequestContext(broker, conn, api_key, version, correlation_id, client_id, cluster, broker.node_id)
    result = HANDLERS[api_key].fn(ctx, request)
    frame = api.to_bytes(api.encode_response(api_key, version, 0, result))
    entry = (epoch, generation, frame, journal_about(api_key, request, cluster.topics_by_id),
             tuple(response_error_codes(api_key, result)))
    if counter.value == epoch and cluster.config.generation == generation and len(frame) <= KEPT_ANSWER_BYTES:
        _keep(cluster, key, entry)
    return entry


def _ordinary(cluster: ClusterState, api_key: int, version: int, body: bytes) -> Any:
    """The decoded request when its API's check calls it ordinary, else None (a version the handler does
    not take, a body that does not decode or has bytes after it: dispatch says so)."""
    handler = HANDLERS.get(api_key) or handler_for(api_key)  # the handler module registers its check
    check = ORDINARY.get(api_key)
    if check is None or handler is None or not handler.min_version <= version <= handler.max_version:
        return None
    try:
        request, end = api.decode_message(api.request_module(api_key), version, memoryview(body))
    except CodecError:
        return None
    # bytes after the body: dispatch ignores them, as Kafka does, and logs that it did
    return request if end == len(body) and check(cluster, version, request) else None


def _keep(cluster: ClusterState, key: tuple[Any, ...], entry: tuple[Any, ...]) -> None:
    kept = cluster.kept_answers
    if len(kept) >= KEPT_ENTRIES:
        kept.clear()
    kept[key] = entry


def lane_apis() -> dict[int, tuple[str, int, AnswerEpoch]]:
    """What setup_kept_answers needs of each kept API: its name, first flexible version (-1: none) and
    the count its answers depend on."""
    out = {}
    for api_key, counter in KEPT_APIS.items():
        flexible = api.APIS[api_key][4]
        out[api_key] = (api.api_name(api_key), -1 if flexible is None else flexible, counter)
    return out
