"""The produce lane: the usual Produce request handled from frame to answer in one C call
(``_producelane.c``), for the request every producer sends most.

Where "usual" is decided -- three places, each with one job:

- **Broker state** (this module, :func:`usual_for`): what keeps every request from the lane while it
  holds, declared as data below (``NOT_USUAL_ON_CONNECTION``, ``NOT_USUAL_WHILE``,
  ``NOT_USUAL_WITH_CONFIG``): a SASL listener, a network partition, fault rules, client quotas, the
  ``drop_produce_responses`` test hook, ACLs (``authorizer.class.name``).  :func:`serve` asks
  :func:`usual_for`; C's borrow() reads the same declaration, handed over once (``setup_usual``,
  native/lanes/lane_usual.h), with no Python call per read: C keeps no list of its own.
- **Topic settings** (:func:`usual_for_topic`, stored by :func:`topic_lane_settings` for C to read):
  ``compression.type=producer``, CreateTime timestamps, no ``retention.bytes`` applied at append, not
  an internal topic.
- **Request shape and partition state** (C, as it reads the frame, refusing before it changes
  anything): v3-12, no transactional id, acks 1 or -1, no tagged fields, nothing after the body; every
  topic known by name; every partition led by this broker, one v2 batch per partition that passes
  every check the Produce handler makes (mockbroker.batches; records decompressed and checked unless
  ``mock.produce.validation=envelope``), not transactional; an idempotent batch only when its
  partition's producer state would append it as it is (``PartitionProducers.admits``: not a retry, in
  sequence), and then its state is recorded as the handler records it; room under
  ``mock.log.max.total.bytes`` for all of it.

To add a condition: a state of the broker or connection that the handler must see goes into the
declaration below, or into lane_state's EVERY_LANE_* when every lane must heed it (an attribute path,
blocking while truthy, or a broker config name, blocking while set); a topic config into
:func:`usual_for_topic`; both ways follow, and tests/broker/test_lane_usual.py shows how to prove it
(turn it on, send a real Produce, see the handler answer it).  Only a new fact of a request's bytes needs
C (produce_lane_wire.h).

Anything not usual (C answers None before changing anything) goes the usual way: the generated codec
decodes, the Produce handler (k00_produce) decides, names and logs.  What the lane appends and answers
is what that path would: the same StoredBatch objects appended as PartitionLog.append appends them
(fetch waiters are woken the same way), the same memory count, the same journal entry, the same answer bytes
(tests/broker/test_produce_lane.py holds the two equal).  ``MOCKBROKER_PURE_PYTHON=1``, or an install
without a C compiler, turns the lane off.

Two ways in: dispatch offers it each Produce frame (:func:`serve`); and a connection with nothing
queued hands the bytes of each read to :func:`borrow_function`'s C ``borrow``, which answers the
leading whole Produce frames straight from the staging buffer with no Python call per request
(produce_lane_staging.h: the same broker state as :func:`usual_for`; the journal entry filed as
Journal.start files it), and each large frame read into a buffer of its own once it is whole.  borrow()
answers ApiVersions too, the first request of nearly every connection, and Metadata and FindCoordinator
from kept answers (handlers/kept_answers.py), under the same broker state: a well-formed ApiVersions
(v0-4, no tagged fields, software name and version Kafka accepts) gets the handler's encoded answer
(k18_api_versions.usual_answer_body) and the handler's journal entry, and the connection its client
software, with no Python call but that one (its ApiVersions ~92k -> ~13k instructions of broker work);
anything else about it is dispatched (tests/broker/test_api_versions_lane.py holds them equal).  The C
code appends to PartitionLog and fills JournalEntry slots itself: if either class changes, the lane
must follow (tests/broker/test_produce_lane.py compares logs and journals).
"""

from __future__ import annotations

import time
from typing import Any

from mockbroker import native
from mockbroker.faults import journal as journal_module
from mockbroker.faults.facts import NOTHING_ABOUT
from mockbroker.faults.journal import PRODUCE_ABOUT, Journal, JournalEntry
from mockbroker.handlers import lane_state
from mockbroker.records.batch import crc32c_function
from mockbroker.state.cluster import Topic
from mockbroker.state.log import PartitionLog, StoredBatch
from mockbroker.state.memory_cap import BATCH_OVERHEAD, FRAME_SHARE, FRAME_SLACK, TOTAL_CAP

SETTINGS_KEY = "produce lane"  # in Topic.answer_cache: see topic_lane_settings
MAX_REFRESHES = 8  # settings computed per request at most (one per topic named, on first use or after a change)

# None (every Produce takes the handler): not built, MOCKBROKER_PURE_PYTHON set, or an untested Python
_lane: Any = native.load("_producelane")
if _lane is not None:
    _lane.setup(StoredBatch, BATCH_OVERHEAD, FRAME_SLACK, FRAME_SHARE, SETTINGS_KEY, PartitionLog)


_decompress: Any = None  # batches.decompressed, loaded with the first Produce (start time)


def _load_decompress() -> Any:
    """batches.decompressed, and the lane's own lz4 decoding (the system's liblz4, when it loads) set
    to the same cap."""
    global _decompress
    from mockbroker.batches import decompressed
    from mockbroker.records.compression import DEFAULT_MAX_SIZE

    if _lane is not None:
        _lane.setup_lz4(DEFAULT_MAX_SIZE)
    _decompress = decompressed
    return decompressed


def available() -> bool:
    """Is the C lane built and turned on?"""
    return _lane is not None


# -- broker state: while any of these holds, every request takes the usual way (read by usual_for, and
# by C's borrow() from setup_usual: handlers/lane_state.py).  Each blocks while its value is truthy.
NOT_USUAL_ON_CONNECTION: tuple[str, ...] = lane_state.EVERY_LANE_ON_CONNECTION
NOT_USUAL_WHILE: tuple[str, ...] = (  # attribute paths from the broker (BrokerServer)
    *lane_state.EVERY_LANE_WHILE,
    "cluster.drop_produce_responses",  # the test hook drops the next Produce answers (k00_produce)
)
NOT_USUAL_WITH_CONFIG: tuple[str, ...] = lane_state.EVERY_LANE_WITH_CONFIG
# usual_for(broker, conn) -> bool: may the lane take a request on ``conn`` now, as far as broker and
# connection state go?  (The topic's part: usual_for_topic; the request's own bytes: C.)
usual_for = lane_state.usual_function(NOT_USUAL_ON_CONNECTION, NOT_USUAL_WHILE, NOT_USUAL_WITH_CONFIG)


def usual_for_topic(policy: Any, retention_bytes: int, topic: Topic) -> bool:
    """May the lane append to ``topic``, as far as its settings go (``policy``, ``retention_bytes``: the
    Produce handler's, k00_produce.settings)?  Stored by :func:`topic_lane_settings` for C to read."""
    return (policy.compression == "producer" and not policy.log_append_time and retention_bytes < 0
            and not topic.is_internal)  # (the handler refuses producing to internal topics)


def topic_lane_settings(cluster: Any, topic: Topic) -> None:
    """Store what the C lane reads of ``topic`` (from the Produce handler's own settings): its config
    generations, whether the lane may append to it (:func:`usual_for_topic`), max.message.bytes, the
    timestamp window, whether keys are required and records checked.  C asks for it when they are
    missing or the topic's config generations moved."""
    from mockbroker.handlers.k00_produce import settings  # the handler loads on first use (start time)

    policy, retention_bytes = settings(cluster, topic)
    topic_generation, broker_generation = topic.config.generation
    topic.answer_cache[SETTINGS_KEY] = (
        topic_generation, broker_generation, usual_for_topic(policy, retention_bytes, topic),
        policy.max_message_bytes, policy.before_max_ms, policy.after_max_ms, policy.compacted, policy.check_records)


def serve(broker: Any, conn: Any, frame: memoryview, version: int, correlation_id: int) -> list[Any] | None:
    """The encoded answer when the lane took the request (already appended and journaled), else None
    (nothing changed: the usual path runs)."""
    if not usual_for(broker, conn):
        return None
    cluster = broker.cluster
    cap = cluster.memory_cap
    limit = cluster.config.values[TOTAL_CAP]
    room = -1 if limit < 0 else max(limit - cap.total, 0)
    journal = cluster.journal
    now_ms = cluster.clock.now_ms()
    decompress = _decompress or _load_decompress()
    started = time.perf_counter()
    for _ in range(MAX_REFRESHES):
        result = _lane.produce(frame, version, cluster.topics, broker.node_id, now_ms, cluster.config.generation,
                               crc32c_function(), decompress, room, journal.enabled)
        if type(result) is not Topic:
            break
        topic_lane_settings(cluster, result)
    else:
        return None
    if result is None:
        return None
    answer, counted, pairs, client_id = result
    cap.total += counted
    if pairs is not None:
        journal.start(now_ms, broker.node_id, conn.peer, client_id, conn.client_software, "Produce", 0, version,
                      correlation_id, (PRODUCE_ABOUT, (pairs, None)), (), (time.perf_counter() - started) * 1000,
                      "answered")
    return [answer]


def borrow_function() -> Any:
    """The C ``borrow(broker, connection, end[, frame])`` a connection hands each read (and each large
    frame, whole) to, or None when the lane is off (see produce_lane_staging.h)."""
    return None if _lane is None else _lane.borrow


def wire(kept_answer: Any, new_frame: Any, large_frame: int) -> None:
    """What the serving path hands the C lane, once (mockbroker.server.dispatch, as it loads): the maker of
    kept answers (:func:`mockbroker.handlers.kept_answers.answer`, which the server wraps to start its
    warm-up) and the connection's allocator of large frames (the C frame_buffer: no Python call a frame)
    with the size above which a frame gets one."""
    if _lane is None:
        return
    from mockbroker.handlers import kept_answers

    _lane.setup_kept_answers(kept_answer, kept_answers.lane_apis())
    _lane.setup_frames(new_frame, large_frame)


if _lane is not None:
    from mockbroker.state.clock import SystemClock

    _lane.setup_staging(topic_lane_settings, PRODUCE_ABOUT, TOTAL_CAP, SystemClock, crc32c_function,
                        _load_decompress, MAX_REFRESHES)
    _lane.setup_usual(lane_state.split(NOT_USUAL_ON_CONNECTION), lane_state.split(NOT_USUAL_WHILE),
                      lane_state.split((lane_state.CONFIG_VALUES,))[0], NOT_USUAL_WITH_CONFIG)
    _lane.setup_journal(JournalEntry, Journal)
    journal_module.use_fast_start(_lane.journal_start)

    def _api_versions_body(cluster: Any, version: int) -> bytes:
        """ApiVersions' encoded answer for borrow(): the handler's, which loads with the first one (start
        time), and then stands in for this function."""
        from mockbroker.handlers.k18_api_versions import usual_answer_body

        _lane.setup_api_versions(usual_answer_body, NOTHING_ABOUT)
        return usual_answer_body(cluster, version)

    _lane.setup_api_versions(_api_versions_body, NOTHING_ABOUT)
