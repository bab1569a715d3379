"""What the produce lane leaves behind it: objects out of the cycle collector's sight, and the answers
of one read's frames in one write (the lane itself is held equal to the handler in test_produce_lane)."""

from __future__ import annotations

import gc
import struct
from typing import Any

import pytest
from confluent_kafka import Producer

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.handlers import produce_lane
from mockbroker.protocol import api
from mockbroker.state.clock import ManualClock
from tests.broker.test_produce_lane import NOW, Counting, _bare_broker

pytestmark = pytest.mark.skipif(not produce_lane.available(),
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")


def _through_the_lane(monkeypatch: pytest.MonkeyPatch, c: MockCluster, partitions: int, count: int,
                      config: dict[str, Any]) -> Producer:
    """``count`` records to a new topic ``t`` from confluent-kafka, which the lane (counted) must take."""
    counting = Counting(produce_lane._lane)
    monkeypatch.setattr(produce_lane, "_lane", counting)
    c.create_topic("t", partitions)
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "linger.ms": 2, **config})
    for i in range(count):
        p.produce("t", value=b"v%d" % i, partition=i % partitions)
    assert p.flush(30) == 0
    assert counting.taken > 0
    return p


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_what_the_lane_keeps_is_out_of_the_cycle_collectors_sight(monkeypatch: pytest.MonkeyPatch,
                                                                    compression: str) -> None:
    """Stored batches, their buffers and journal entries the lane makes are untracked (none can be in a
    cycle) and are freed by reference counting, through full collections, when the topic goes."""
    with MockCluster(brokers=1) as c:
        p = _through_the_lane(monkeypatch, c, 2, 2000, {"compression.type": compression})
        batches = [b for log in c.state.topics["t"].partitions for b in log.batches]
        entries = c.journal.entries(api="Produce")
        assert batches and entries
        assert not any(gc.is_tracked(b) or gc.is_tracked(b.buffers) for b in batches)
        assert not any(gc.is_tracked(e) or gc.is_tracked(e._about) for e in entries)
        assert sum(len(bytes(b.buffers[1])) + 16 for b in batches) == sum(b.size for b in batches)
        del batches, entries
        gc.collect()
        c.state.delete_topic("t")
        c.journal.clear()
        gc.collect()
        c.create_topic("t", 2)  # the broker goes on serving
        assert p.produce("t", value=b"again") is None and p.flush(30) == 0


class _Writes:
    """A transport that keeps each write call's bytes apart."""

    def __init__(self) -> None:
        self.calls: list[bytes] = []

    def write(self, data: Any) -> None:
        self.calls.append(bytes(data))


def _plain_produce(correlation_id: int, topic: str = "plain") -> bytes:
    m = api.request_module(0)
    body = m.ProduceRequest(acks=1, timeout_ms=1000, topic_data=[m.TopicProduceData(name=topic, partition_data=[
        m.PartitionProduceData(index=0, records=rec.build_batch([(None, b"v%d" % correlation_id, [], NOW)]))])])
    return api.to_bytes(api.encode_request(0, 9, correlation_id, body, "c"))


@pytest.mark.parametrize("last", ["other", "refused", "none"])
def test_the_answers_to_one_reads_frames_go_out_in_one_write(last: str) -> None:
    """borrow() writes the answers of every Produce frame it took from one read together, in order,
    before it returns (where dispatch takes over: a ListGroups frame, or a Produce the lane refuses)."""
    from mockbroker.server.connection import Connection

    broker = _bare_broker()
    broker.cluster.clock = ManualClock(NOW)
    frames = [_plain_produce(c) for c in (1, 2, 3, 4)]
    tail = {"other": api.to_bytes(api.encode_request(16, 4, 5, api.request_module(16).ListGroupsRequest(), "c")),
            "refused": _plain_produce(5, topic="missing"), "none": b""}[last]
    data = b"".join(frames) + tail
    staging = bytearray(1 << 16)
    staging[:len(data)] = data
    conn = Connection(0, lambda c, f: None, 1 << 20, memoryview(staging))
    conn.peer = "127.0.0.1:1"
    conn.transport = written = _Writes()  # type: ignore[assignment]
    done = produce_lane.borrow_function()(broker, conn, len(data))
    taken = sum(len(f) for f in frames)
    assert done == (~taken if last == "refused" else taken)
    assert len(written.calls) == 1
    out, ids = written.calls[0], []
    while out:
        size = struct.unpack_from(">i", out)[0]
        ids.append(struct.unpack_from(">i", out, 4)[0])
        out = out[4 + size:]
    assert ids == [1, 2, 3, 4]


def test_the_lane_keeps_each_idempotent_batchs_crc_for_the_reuse_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The producer state remembers the CRC of every idempotent batch the lane stores, as the handler
    does, so a later batch repeating its sequence numbers with other bytes is told apart from a retry."""
    with MockCluster(brokers=1) as c:
        _through_the_lane(monkeypatch, c, 1, 300, {"enable.idempotence": True})
        log = c.state.topics["t"].partitions[0]
        stored = {b.base_offset: struct.unpack_from(">I", b"".join(bytes(x) for x in b.buffers), 17)[0]
                  for b in log.batches}
        (entry,) = log.producers.entries.values()
        assert entry.batches and all(meta.crc == stored[meta.first_offset] for meta in entry.batches)


def test_the_lane_reads_what_a_class_changed_at_run_time_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane remembers where each attribute it reads lives (native/lanes/member_sites.h); a class
    changed at run time (here Journal.enabled, a slot, replaced by a property and put back) is read
    anew, not from the slot it remembered."""
    from mockbroker.faults.journal import Journal
    from tests.broker.wire import WireClient

    m = api.request_module(0)
    with MockCluster(brokers=1, topics={"t": 1}) as c, \
            WireClient(int(c.bootstrap_servers.rsplit(":", 1)[1])) as client:
        lane = produce_lane._lane

        def produce_and_count() -> tuple[int, int]:
            """(requests the lane took, Produce entries in the journal) after one more Produce."""
            before = lane.staging_taken()
            answer = client.call(0, 9, m.ProduceRequest(acks=1, timeout_ms=5000, topic_data=[m.TopicProduceData(
                name="t", partition_data=[m.PartitionProduceData(index=0, records=rec.build_batch([(None, b"v")]))])]))
            assert answer.responses[0].partition_responses[0].error_code == 0
            return lane.staging_taken() - before, len(c.journal.entries(api="Produce"))

        assert produce_and_count() == (1, 1)
        monkeypatch.setattr(Journal, "enabled", property(lambda self: False))
        assert produce_and_count() == (1, 1)  # answered by the lane, journaled by nobody
        monkeypatch.undo()  # the slot is back, still holding True
        assert produce_and_count() == (1, 2)
