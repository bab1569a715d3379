"""Idempotent and transactional produce over the wire: the errors Kafka answers for sequence gaps,
old epochs, unknown producers and writes outside a transaction; retries answered with their original
offsets; the transaction APIs' error codes; read_committed fetches and ListOffsets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from tests.broker.wire import WireClient, fetch_body, produce_body

NOW = int(time.time() * 1000)
INT32_MAX = 2**31 - 1


@pytest.fixture
def one() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 2}) as cluster:
        yield cluster


def batch(pid: int, epoch: int, seq: int, n: int = 1, txn: bool = False) -> bytes:
    return rec.build_batch([(None, f"v{seq + i}".encode(), None, NOW) for i in range(n)], producer_id=pid,
                           producer_epoch=epoch, base_sequence=seq, transactional=txn)


def produce(c: WireClient, data: bytes, partition: int = 0, version: int = 9) -> Any:
    resp = c.call(0, version, produce_body(version, "t", partition, data))
    return resp.responses[0].partition_responses[0]


def init_pid(c: WireClient, txn_id: str | None = None, pid: int = -1, epoch: int = -1, version: int = 4) -> Any:
    m = api.request_module(22)
    return c.call(22, version, m.InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000,
                                                       producer_id=pid, producer_epoch=epoch))


def add_partitions(c: WireClient, txn_id: str, pid: int, epoch: int, partitions: list[int], version: int = 3,
                   topic: str = "t") -> dict[int, int]:
    m = api.request_module(24)
    resp = c.call(24, version, m.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[m.AddPartitionsToTxnTopic(name=topic, partitions=partitions)]))
    results = resp.results_by_topic_v3_and_below[0].results_by_partition
    return {r.partition_index: r.partition_error_code for r in results}


def end_txn(c: WireClient, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3) -> Any:
    m = api.request_module(26)
    return c.call(26, version, m.EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                               committed=commit))


def test_sequences_duplicates_and_epochs(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c).producer_id
        assert produce(c, batch(pid, 0, 0, 3)).base_offset == 0
        assert produce(c, batch(pid, 0, 3, 2)).base_offset == 3
        retry = produce(c, batch(pid, 0, 0, 3))  # a retry of an acknowledged batch: its original offset
        assert (retry.error_code, retry.base_offset) == (0, 0)
        assert produce(c, batch(pid, 0, 7)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # gap
        assert produce(c, batch(pid, 0, 4)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # overlap
        assert produce(c, batch(pid, 1, 5)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # new epoch, not 0
        assert produce(c, batch(pid, 1, 0)).base_offset == 5
        assert produce(c, batch(pid, 0, 5)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert produce(c, batch(pid + 50, 0, 9)).error_code == ErrorCode.UNKNOWN_PRODUCER_ID
        assert produce(c, batch(pid, 0, 0), partition=1).base_offset == 0  # sequences are per partition
        assert one.state.topics["t"].partitions[0].next_offset == 6


def test_only_the_last_five_batches_are_remembered(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c).producer_id
        for seq in range(7):
            assert produce(c, batch(pid, 0, seq)).base_offset == seq
        assert produce(c, batch(pid, 0, 2)).base_offset == 2  # still in the window
        assert produce(c, batch(pid, 0, 1)).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # fell out


def test_sequence_wraps_at_int32_max(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c).producer_id
        assert produce(c, batch(pid, 0, 0)).error_code == 0
        log = one.state.topics["t"].partitions[0]
        log.producers.entries[pid].batches[-1].last_seq = INT32_MAX - 2  # as if 2**31 records had been sent
        assert produce(c, batch(pid, 0, INT32_MAX - 1, 3)).error_code == 0  # INT32_MAX-1, INT32_MAX, 0
        assert log.producers.entries[pid].last_seq == 0
        assert produce(c, batch(pid, 0, 1)).error_code == 0


def test_producer_state_expires(one: MockCluster) -> None:
    one.state.config.set("producer.id.expiration.ms", 1)
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c).producer_id
        assert produce(c, batch(pid, 0, 0)).error_code == 0
        time.sleep(0.3)  # the cluster's 100 ms tick forgets the idle producer
        assert produce(c, batch(pid, 0, 1)).error_code == ErrorCode.UNKNOWN_PRODUCER_ID


def test_transactional_writes_need_the_partition_in_the_transaction(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        r = init_pid(c, "tx")
        pid, epoch = r.producer_id, r.producer_epoch
        assert produce(c, batch(pid, epoch, 0, txn=True)).error_code == ErrorCode.INVALID_TXN_STATE
        assert add_partitions(c, "tx", pid, epoch, [0]) == {0: 0}
        assert produce(c, batch(pid, epoch, 0, txn=True)).error_code == 0
        assert produce(c, batch(pid, epoch, 1)).error_code == ErrorCode.INVALID_TXN_STATE  # not transactional
        assert produce(c, batch(pid, epoch, 0, txn=True), partition=1, version=12).error_code == 0  # implicit add
        assert one.state.transactions.transactions["tx"].partitions == {("t", 0), ("t", 1)}
        assert end_txn(c, "tx", pid, epoch, commit=True).error_code == 0
        assert end_txn(c, "tx", pid, epoch, commit=True).error_code == 0  # a retried end
        assert end_txn(c, "tx", pid, epoch, commit=False).error_code == ErrorCode.INVALID_TXN_STATE
        assert produce(c, batch(pid, epoch, 1, txn=True)).error_code == ErrorCode.INVALID_TXN_STATE  # txn over


def test_a_late_retry_after_the_transaction_ended_is_invalid_txn_state(one: MockCluster) -> None:
    """Kafka verifies the transaction (KIP-890) before the log looks for duplicates or checks sequences:
    once the transaction is aborted, a retry of its batch, or a resent batch of another size from the
    same sequence (librdkafka after a lost answer), gets INVALID_TXN_STATE, neither its old offsets nor
    OUT_OF_ORDER_SEQUENCE_NUMBER (which librdkafka treats as fatal)."""
    with WireClient(one.brokers[0].port) as c:
        r = init_pid(c, "late")
        pid, epoch = r.producer_id, r.producer_epoch
        assert add_partitions(c, "late", pid, epoch, [0]) == {0: 0}
        assert produce(c, batch(pid, epoch, 0, n=15, txn=True)).error_code == 0
        assert end_txn(c, "late", pid, epoch, commit=False).error_code == 0
        assert produce(c, batch(pid, epoch, 0, n=15, txn=True)).error_code == ErrorCode.INVALID_TXN_STATE
        assert produce(c, batch(pid, epoch, 0, n=16, txn=True)).error_code == ErrorCode.INVALID_TXN_STATE
        # while the transaction is open, a retry is still a duplicate answered with its offsets
        assert add_partitions(c, "late", pid, epoch, [0]) == {0: 0}
        first = produce(c, batch(pid, epoch, 15, n=5, txn=True))
        again = produce(c, batch(pid, epoch, 15, n=5, txn=True))
        assert first.error_code == again.error_code == 0 and again.base_offset == first.base_offset


def test_coordinator_errors(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        m = api.request_module(22)
        too_long = c.call(22, 4, m.InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=10**9,
                                                         producer_id=-1, producer_epoch=-1))
        assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
        first = init_pid(c, "tx")
        second = init_pid(c, "tx")
        assert (second.producer_id, second.producer_epoch) == (first.producer_id, first.producer_epoch + 1)
        pid = first.producer_id
        assert add_partitions(c, "tx", pid, 0, [0]) == {0: ErrorCode.PRODUCER_FENCED}
        assert add_partitions(c, "tx", pid, 0, [0], version=1) == {0: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert add_partitions(c, "tx", pid + 1, 1, [0]) == {0: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
        assert add_partitions(c, "nope", pid, 1, [0]) == {0: ErrorCode.INVALID_PRODUCER_ID_MAPPING}
        assert add_partitions(c, "tx", pid, 1, [0, 9]) == {0: ErrorCode.OPERATION_NOT_ATTEMPTED,
                                                           9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert end_txn(c, "tx", pid, 1, commit=True).error_code == ErrorCode.INVALID_TXN_STATE  # nothing open
        assert add_partitions(c, "tx", pid, 1, [0]) == {0: 0}
        # KIP-360: the holder of an open transaction re-initialising aborts it first (retry later) ...
        assert init_pid(c, "tx", pid, 1).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
        txn = one.state.transactions.transactions["tx"]
        assert (txn.state, txn.epoch) == ("CompleteAbort", 2)  # fenced: the abort went out with epoch 2
        assert init_pid(c, "tx", pid, 1).error_code == ErrorCode.PRODUCER_FENCED  # ... its old epoch is gone
        bumped = init_pid(c, "tx", pid, 2)
        assert (bumped.error_code, bumped.producer_epoch) == (0, 3)
        retried = init_pid(c, "tx", pid, 2)  # the answer was lost and the client asks again: same answer
        assert (retried.error_code, retried.producer_epoch) == (0, 3)
        assert init_pid(c, "tx", pid + 7, 3).error_code == ErrorCode.PRODUCER_FENCED
        assert init_pid(c, "tx", pid, 3, version=3).error_code == 0
        assert init_pid(c, "tx", pid, 1, version=3).error_code == ErrorCode.INVALID_PRODUCER_EPOCH  # before v4


def test_end_txn_v5_bumps_the_epoch(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        r = init_pid(c, "tx5", version=5)
        pid = r.producer_id
        assert add_partitions(c, "tx5", pid, 0, [0]) == {0: 0}
        ended = end_txn(c, "tx5", pid, 0, commit=True, version=5)
        assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (0, pid, 1)
        retried = end_txn(c, "tx5", pid, 0, commit=True, version=5)  # lost answer, same request again
        assert (retried.error_code, retried.producer_epoch) == (0, 1)


def test_markers_delay_gives_concurrent_transactions(one: MockCluster) -> None:
    one.state.config.set("mock.transaction.marker.delay.ms", 400)
    with WireClient(one.brokers[0].port) as c:
        r = init_pid(c, "slow")
        pid = r.producer_id
        add_partitions(c, "slow", pid, 0, [0])
        assert end_txn(c, "slow", pid, 0, commit=True).error_code == 0
        assert end_txn(c, "slow", pid, 0, commit=True).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
        assert add_partitions(c, "slow", pid, 0, [0]) == {0: ErrorCode.CONCURRENT_TRANSACTIONS}
        time.sleep(0.7)
        assert end_txn(c, "slow", pid, 0, commit=True).error_code == 0
        assert one.state.transactions.transactions["slow"].state == "CompleteCommit"


def test_transaction_timeout_aborts_and_fences(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        m = api.request_module(22)
        r = c.call(22, 4, m.InitProducerIdRequest(transactional_id="short", transaction_timeout_ms=100,
                                                  producer_id=-1, producer_epoch=-1))
        pid = r.producer_id
        add_partitions(c, "short", pid, 0, [0])
        assert produce(c, batch(pid, 0, 0, 2, txn=True)).error_code == 0
        time.sleep(0.5)
        txn = one.state.transactions.transactions["short"]
        assert (txn.state, txn.epoch) == ("CompleteAbort", 1)
        assert produce(c, batch(pid, 0, 2, txn=True)).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert end_txn(c, "short", pid, 0, commit=True).error_code == ErrorCode.PRODUCER_FENCED
        log = one.state.topics["t"].partitions[0]
        assert [(a.first_offset, a.last_offset) for a in log.producers.aborted] == [(0, 2)]


def test_read_committed_fetch_and_list_offsets(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c, "rc").producer_id
        add_partitions(c, "rc", pid, 0, [0])
        produce(c, batch(pid, 0, 0, 2, txn=True))  # offsets 0-1, aborted below
        end_txn(c, "rc", pid, 0, commit=False)  # marker at 2
        add_partitions(c, "rc", pid, 0, [0])
        produce(c, batch(pid, 0, 2, 3, txn=True))  # offsets 3-5, still open

        def fetch(isolation: int) -> Any:
            body = fetch_body("t", 0, 0)
            body.isolation_level = isolation
            return c.call(1, 11, body).responses[0].partitions[0]

        committed = fetch(1)
        assert (committed.high_watermark, committed.last_stable_offset) == (6, 3)
        got = [rec.parse_batch_header(view).base_offset for _, _, view in rec.iter_batches(committed.records)]
        assert got == [0, 2]  # the aborted data and its marker, not the open txn
        assert [(a.producer_id, a.first_offset) for a in committed.aborted_transactions] == [(pid, 0)]
        uncommitted = fetch(0)
        assert uncommitted.aborted_transactions is None and uncommitted.last_stable_offset == 3
        lo = api.request_module(2)
        body = lo.ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[lo.ListOffsetsTopic(
            name="t", partitions=[lo.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
        assert c.call(2, 5, body).topics[0].partitions[0].offset == 3
        body.isolation_level = 0
        assert c.call(2, 5, body).topics[0].partitions[0].offset == 6


def test_txn_offset_commit_is_visible_only_after_commit(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c, "off").producer_id
        t = api.request_module(28)

        def commit_offsets(offset: int, group: str = "g") -> int:
            body = t.TxnOffsetCommitRequest(transactional_id="off", group_id=group, producer_id=pid, producer_epoch=0,
                                            topics=[t.TxnOffsetCommitRequestTopic(name="t", partitions=[
                                                t.TxnOffsetCommitRequestPartition(partition_index=0,
                                                                                  committed_offset=offset,
                                                                                  committed_metadata="m")])])
            return c.call(28, 3, body).topics[0].partitions[0].error_code

        f = api.request_module(9)

        def fetched(stable: bool) -> tuple[int, int]:
            body = f.OffsetFetchRequest(groups=[f.OffsetFetchRequestGroup(group_id="g", topics=[
                f.OffsetFetchRequestTopics(name="t", partition_indexes=[0])])], require_stable=stable)
            p = c.call(9, 8, body).groups[0].topics[0].partitions[0]
            return p.error_code, p.committed_offset

        a = api.request_module(25)
        assert commit_offsets(5) == ErrorCode.INVALID_TXN_STATE  # AddOffsetsToTxn first
        added = c.call(25, 2, a.AddOffsetsToTxnRequest(transactional_id="off", producer_id=pid, producer_epoch=0,
                                                        group_id="g"))
        assert added.error_code == 0
        assert commit_offsets(5) == 0
        assert fetched(stable=False) == (0, -1)
        assert fetched(stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert end_txn(c, "off", pid, 0, commit=True).error_code == 0
        assert fetched(stable=True) == (0, 5)
        c.call(25, 2, a.AddOffsetsToTxnRequest(transactional_id="off", producer_id=pid, producer_epoch=0,
                                               group_id="g"))
        assert commit_offsets(9) == 0
        assert end_txn(c, "off", pid, 0, commit=False).error_code == 0
        assert fetched(stable=True) == (0, 5)  # the aborted commit never shows


def test_add_partitions_v4_batches_and_verifies(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        a = init_pid(c, "va")
        b = init_pid(c, "vb")
        assert add_partitions(c, "va", a.producer_id, 0, [0]) == {0: 0}
        m = api.request_module(24)

        def txn(txn_id: str, pid: int, verify: bool) -> Any:
            return m.AddPartitionsToTxnTransaction(transactional_id=txn_id, producer_id=pid, producer_epoch=0,
                                                   verify_only=verify,
                                                   topics=[m.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])])

        resp = c.call(24, 4, m.AddPartitionsToTxnRequest(transactions=[txn("va", a.producer_id, True),
                                                                       txn("vb", b.producer_id, False)]))
        codes = {r.transactional_id: {p.partition_index: p.partition_error_code
                                      for p in r.topic_results[0].results_by_partition}
                 for r in resp.results_by_transaction}
        assert resp.error_code == 0
        assert codes == {"va": {0: 0, 1: ErrorCode.INVALID_TXN_STATE}, "vb": {0: 0, 1: 0}}
        assert one.state.transactions.transactions["va"].partitions == {("t", 0)}  # verify adds nothing


def test_write_txn_markers_closes_a_transaction_on_the_leader(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c, "wm").producer_id
        add_partitions(c, "wm", pid, 0, [0])
        produce(c, batch(pid, 0, 0, 2, txn=True))
        log = one.state.topics["t"].partitions[0]
        assert log.last_stable_offset == 0
        m = api.request_module(27)

        def write(epoch: int, partitions: list[int]) -> dict[int, int]:
            body = m.WriteTxnMarkersRequest(markers=[m.WritableTxnMarker(
                producer_id=pid, producer_epoch=epoch, transaction_result=False, coordinator_epoch=0,
                topics=[m.WritableTxnMarkerTopic(name="t", partition_indexes=partitions)])])
            result = c.call(27, 1, body).markers[0].topics[0].partitions
            return {p.partition_index: p.error_code for p in result}

        assert write(0, [0, 7]) == {0: 0, 7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert (log.last_stable_offset, log.next_offset) == (3, 3)
        assert [(a.first_offset, a.last_offset) for a in log.producers.aborted] == [(0, 2)]
        write(3, [0])
        assert write(1, [0]) == {0: ErrorCode.INVALID_PRODUCER_EPOCH}
