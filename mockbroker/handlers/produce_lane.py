"""The produce lane: the usual Produce request handled from frame to answer in one C call
(``_producelane.c``), for the request every producer sends most.

The lane is tried only while nothing needs a word per request: no fault rules, client quotas, ACLs,
SASL, network partition or ``drop_produce_responses`` test hook.  It then takes a request (v3-12) only
when the Python path would append every partition without a word to say:

- no transactional id, acks 1 or -1, no tagged fields, nothing after the body;
- every topic known by name, with ``compression.type=producer``, CreateTime timestamps and no
  ``retention.bytes`` applied at append (the lane settings below);
- every partition led by this broker, one v2 batch per partition that passes every check the Produce
  handler makes (mockbroker.batches; records decompressed and checked unless
  ``mock.produce.validation=envelope``), not transactional; an idempotent batch only when its
  partition's producer state would append it as it is (``PartitionProducers.admits``: not a retry,
  in sequence), and then its state is recorded as the handler records it;
- room under ``mock.log.max.total.bytes`` for all of it.

Anything else (C answers None before changing anything) goes the usual way: the generated codec
decodes, the Produce handler (k00_produce) decides, names and logs.  What the lane appends and answers
is what that path would: the same StoredBatch objects appended as PartitionLog.append appends them
(fetch waiters are woken the same way), the same memory count, the same journal entry, the same answer bytes
(tests/broker/test_produce_lane.py holds the two equal).  ``MOCKBROKER_PURE_PYTHON=1``, or an install
without a C compiler, turns the lane off.

Two ways in: dispatch offers it each Produce frame (:func:`serve`); and a connection with nothing
queued hands the bytes of each read to :func:`borrow_function`'s C ``borrow``, which answers the
leading whole Produce frames straight from the staging buffer with no Python call per request
(produce_lane_staging.h: the same checks as :func:`serve`; the journal entry filed as Journal.start
files it), and each large frame read into a buffer of its own once it is whole.  borrow() answers
ApiVersions too, the first request of nearly every connection: a well-formed request (v0-4, no tagged
fields, software name and version Kafka accepts) gets the handler's encoded answer
(k18_api_versions.usual_answer_body) and the handler's journal entry, and the connection its client
software, with no Python call but that one (its ApiVersions ~92k -> ~13k instructions of broker work);
anything else about it is dispatched (tests/broker/test_api_versions_lane.py holds them equal).  The C
code appends to PartitionLog and fills JournalEntry slots itself: if either class changes, the lane
must follow (tests/broker/test_produce_lane.py compares logs and journals).
"""

from __future__ import annotations

import os
import time
from typing import Any

from mockbroker.faults import journal as journal_module
from mockbroker.faults.facts import NOTHING_ABOUT
from mockbroker.faults.journal import PRODUCE_ABOUT, Journal, JournalEntry
from mockbroker.records.batch import crc32c_function
from mockbroker.state.cluster import Topic
from mockbroker.state.log import PartitionLog, StoredBatch
from mockbroker.state.memory_cap import BATCH_OVERHEAD, FRAME_SHARE, FRAME_SLACK, TOTAL_CAP

SETTINGS_KEY = "produce lane"  # in Topic.answer_cache: see lane_settings
MAX_REFRESHES = 8  # settings computed per request at most (one per topic named, on first use or after a change)

_lane: Any = None
if os.environ.get("MOCKBROKER_PURE_PYTHON", "") in ("", "0"):
    try:
        from mockbroker.native import _producelane as _lane
    except ImportError:  # built without a C compiler: every Produce takes the handler
        _lane = None
    else:
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


def lane_settings(cluster: Any, topic: Topic) -> None:
    """Store what the C lane reads of ``topic`` (from the Produce handler's own settings): its config
    generations, whether the lane may append to it, max.message.bytes, the timestamp window, whether
    keys are required and records checked."""
    from mockbroker.handlers.k00_produce import settings  # the handler loads on first use (start time)

    policy, retention_bytes = settings(cluster, topic)
    topic_generation, broker_generation = topic.config.generation
    eligible = (policy.compression == "producer" and not policy.log_append_time and retention_bytes < 0
                and not topic.is_internal)  # (the handler refuses producing to internal topics)
    topic.answer_cache[SETTINGS_KEY] = (
        topic_generation, broker_generation, eligible, policy.max_message_bytes, policy.before_max_ms,
        policy.after_max_ms, policy.compacted, policy.check_records)


def serve(broker: Any, conn: Any, frame: memoryview, version: int, correlation_id: int) -> list[Any] | None:
    """The encoded answer when the lane took the request (already appended and journaled), else None
    (nothing changed: the usual path runs).  Dispatch calls it only off SASL listeners."""
    cluster = broker.cluster
    if (broker.partitioned or cluster.faults.rules or cluster.quotas.enabled
            or cluster.drop_produce_responses > 0 or cluster.acls.enabled):
        return None
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
        lane_settings(cluster, result)
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


if _lane is not None:
    from mockbroker.state.clock import SystemClock

    _lane.setup_staging(lane_settings, PRODUCE_ABOUT, TOTAL_CAP, SystemClock, crc32c_function, _load_decompress,
                        MAX_REFRESHES)
    _lane.setup_journal(JournalEntry, Journal)
    journal_module.use_fast_start(_lane.journal_start)

    def _api_versions_body(cluster: Any, version: int) -> bytes:
        """ApiVersions' encoded answer for borrow(): the handler's, which loads with the first one (start
        time), and then stands in for this function."""
        from mockbroker.handlers.k18_api_versions import usual_answer_body

        _lane.setup_api_versions(usual_answer_body, NOTHING_ABOUT)
        return usual_answer_body(cluster, version)

    _lane.setup_api_versions(_api_versions_body, NOTHING_ABOUT)
    from mockbroker.handlers import kept_answers

    _lane.setup_kept_answers(kept_answers.answer, kept_answers.lane_apis())
    from mockbroker.server import connection

    _lane.setup_frames(connection._new_frame, connection.LARGE_FRAME)  # the C frame_buffer: no Python call a frame
