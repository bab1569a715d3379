"""The data directory's file format (mockbroker.store.segment_files, durable_log, loading): batches written
as they are stored, scanned back by their length fields, a cut-short or damaged tail found and cut, magic
0/1 message sets recognised; and a DurableLog's files freed by DeleteRecords and rewritten by compaction."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from mockbroker import records as rec
from mockbroker.batches import stored_batch
from mockbroker.state.cluster import ClusterState
from mockbroker.state.compaction import compact_log
from mockbroker.state.log import PartitionLog
from mockbroker.store import durable_log, loading
from mockbroker.store import segment_files as files
from mockbroker.store.durable_log import DurableLog


def _batch(base: int, count: int = 3, pid: int = -1, seq: int = -1, key: bytes | None = None) -> bytes:
    return rec.build_batch([(key, b"value-%d" % i) for i in range(count)], base_offset=base,
                           base_timestamp=1_700_000_000_000, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                           base_sequence=seq)


def _log(tmp_path: Path, segment_bytes: int = 1 << 30) -> DurableLog:
    return DurableLog("t", 0, 0, [0], str(tmp_path / "t-0"), segment_bytes=segment_bytes)


def _append(log: PartitionLog, count: int = 3, pid: int = -1, seq: int = -1, key: bytes | None = None) -> None:
    data = _batch(log.next_offset, count, pid, seq, key)
    log.append(stored_batch(memoryview(data), log.next_offset, log.leader_epoch))


def test_file_names_are_kafkas_20_digit_base_offsets() -> None:
    assert files.file_name(0) == "00000000000000000000.log"
    assert files.file_name(1234) == "00000000000000001234.log"
    assert files.base_of("00000000000000001234.log") == 1234
    assert files.base_of("leader-epoch-checkpoint") is None


def test_appends_are_the_stored_bytes_and_scan_back(tmp_path: Path) -> None:
    log = _log(tmp_path)
    for _ in range(4):
        _append(log)
    data = (tmp_path / "t-0" / files.file_name(0)).read_bytes()
    assert data == b"".join(b"".join(bytes(x) for x in b.buffers) for b in log.batches)
    scan = files.scan(data, -1)
    assert scan.problem == ""
    assert [(e.base_offset, e.last_offset) for e in scan.entries] == [(0, 2), (3, 5), (6, 8), (9, 11)]
    assert scan.good_end == len(data)


def test_a_truncated_tail_is_found(tmp_path: Path) -> None:
    one, two = _batch(0), _batch(3)
    scan = files.scan(one + two[:-5])
    assert [e.base_offset for e in scan.entries] == [0]
    assert scan.good_end == len(one)
    assert "says" in scan.problem
    assert files.scan(one + two[:7]).good_end == len(one)  # not even the 12-byte prefix


def test_a_flipped_byte_is_found_by_the_crc() -> None:
    one, two = _batch(0), bytearray(_batch(3))
    two[-3] ^= 0x40  # a byte of the last record's value
    scan = files.scan(one + bytes(two))
    assert [e.base_offset for e in scan.entries] == [0]
    assert "CRC" in scan.problem
    assert files.scan(one + bytes(two), check_last=0).problem == ""  # only the lengths walked


@pytest.mark.parametrize("magic", [0, 1])
def test_magic_0_and_1_message_sets_are_recognised_and_checked(magic: int) -> None:
    data = rec.build_message_set([(b"k", b"v0"), (b"k", b"v1")], magic, base_offset=7)
    scan = files.scan(data, -1)
    assert scan.problem == ""
    assert [(e.magic, e.base_offset) for e in scan.entries] == [(magic, 7), (magic, 8)]
    damaged = bytearray(data)
    damaged[-1] ^= 1
    assert "CRC" in files.scan(bytes(damaged), -1).problem


def test_a_magic_1_file_loads_as_v2_batches(tmp_path: Path) -> None:
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / files.file_name(0)).write_bytes(rec.build_message_set([(b"k", b"a"), (None, b"b")], 1))
    log = PartitionLog("t", 0, 0, [0])
    loading.read_partition(log, str(folder), 0, writable=False)
    assert log.next_offset == 2
    values = []
    for batch in log.batches:  # each magic 1 message becomes a v2 batch at its own offset
        _header, records = rec.decode_batch(memoryview(b"".join(bytes(b) for b in batch.buffers)))
        values += [(batch.base_offset + r.offset_delta, bytes(r.value)) for r in records]
    assert values == [(0, b"a"), (1, b"b")]


def test_reading_back_cuts_a_damaged_tail_and_says_so_in_one_line(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    log = _log(tmp_path)
    for _ in range(3):
        _append(log, pid=5, seq=3 * len(log.batches))
    log.close()
    path = tmp_path / "t-0" / files.file_name(0)
    good = path.stat().st_size
    with open(path, "ab") as f:
        f.write(_batch(9)[:40])  # a write cut short by a kill
    again = _log(tmp_path)
    with caplog.at_level(logging.WARNING, "mockbroker.store"):
        top = loading.read_partition(again, str(tmp_path / "t-0"), 0, writable=True)
    lines = [r.getMessage() for r in caplog.records if r.name == "mockbroker.store"]
    assert len(lines) == 1 and "t-0/00000000000000000000.log" in lines[0] and "40 bytes dropped" in lines[0]
    assert path.stat().st_size == good
    assert (again.log_start_offset, again.next_offset, top) == (0, 9, 5)
    assert again.producers.entries[5].last_seq == 8  # idempotent state rebuilt from the batches
    _append(again)  # appends go on at the cut
    assert files.scan(path.read_bytes(), -1).problem == ""


def test_files_roll_and_delete_records_frees_whole_files(tmp_path: Path) -> None:
    size = len(_batch(0))
    log = _log(tmp_path, segment_bytes=2 * size)
    for _ in range(6):
        _append(log)
    folder = tmp_path / "t-0"
    assert sorted(files.base_of(n) for n in os.listdir(folder) if files.base_of(n) is not None) == [0, 6, 12]
    log.advance_log_start(7)  # inside the second file: only the first goes
    assert sorted(n for n in os.listdir(folder) if n.endswith(".log")) == [files.file_name(6), files.file_name(12)]
    assert durable_log.read_small(str(folder), durable_log.LOG_START_FILE) == "7\n"
    log.advance_log_start(log.next_offset)  # everything: every file goes
    assert [n for n in os.listdir(folder) if n.endswith(".log")] == []
    _append(log)
    assert [n for n in os.listdir(folder) if n.endswith(".log")] == [files.file_name(18)]
    back = PartitionLog("t", 0, 0, [0])
    loading.read_partition(back, str(folder), 0, writable=False)
    assert (back.log_start_offset, back.next_offset) == (18, 21)


def test_compaction_rewrites_the_files(tmp_path: Path) -> None:
    size = len(_batch(0, 1, key=b"k"))
    log = _log(tmp_path, segment_bytes=2 * size)
    for _ in range(6):
        _append(log, 1, key=b"k")
    before = sum(p.stat().st_size for p in (tmp_path / "t-0").glob("*.log"))
    result = compact_log(log, 1_700_000_000_000, 0, segment_starts=list(log.segments))
    assert result.removed_records > 0
    after = sum(p.stat().st_size for p in (tmp_path / "t-0").glob("*.log"))
    assert after == log.size_bytes < before
    back = PartitionLog("t", 0, 0, [0])
    loading.read_partition(back, str(tmp_path / "t-0"), 0, writable=False)
    assert [(b.base_offset, b.size) for b in back.batches] == [(b.base_offset, b.size) for b in log.batches]


def test_leader_epochs_are_kept_and_bumped_at_start(tmp_path: Path) -> None:
    state = ClusterState()
    from mockbroker.store.data_dir import DataDir

    data_dir = DataDir(str(tmp_path / "dd"))
    data_dir.load(state)
    state.create_topic("e", 1)
    log = state.topics["e"].partitions[0]
    _append(log)
    log.bump_leader_epoch()
    data_dir.close()
    fresh = ClusterState()
    again = DataDir(str(tmp_path / "dd"))
    assert again.load(fresh)
    reloaded = fresh.topics["e"].partitions[0]
    assert reloaded.leader_epoch == 2  # 1 before the restart, bumped once by it
    assert reloaded.epoch_starts == [(0, 0), (1, 3), (2, 3)]
    again.close()


def test_a_snapshot_of_more_batches_than_one_writev_takes(tmp_path: Path) -> None:
    from mockbroker.store import snapshot

    state = ClusterState()
    state.create_topic("many", 1)
    log = state.topics["many"].partitions[0]
    for _ in range(files.IOV_MAX + 10):  # each batch two buffers: over IOV_MAX buffers in one file
        _append(log, 1)
    snapshot.write(state, str(tmp_path / "snap"))
    again = ClusterState()
    snapshot.load(again, str(tmp_path / "snap"))
    back = again.topics["many"].partitions[0]
    assert back.next_offset == log.next_offset
    assert [b"".join(bytes(x) for x in b.buffers) for b in back.batches] == [
        b"".join(bytes(x) for x in b.buffers) for b in log.batches]


def test_producer_state_is_rebuilt_from_the_files(tmp_path: Path) -> None:
    log = _log(tmp_path)
    _append(log)  # offsets 0-2, no producer
    txn = rec.build_batch([(None, b"t0"), (None, b"t1")], base_offset=3, producer_id=7, producer_epoch=2,
                          base_sequence=0, transactional=True)
    log.producers.record_append(7, 2, 0, 1, 3, 4, 0, 0, True)
    log.append(stored_batch(memoryview(txn), 3, 0))
    log.append_marker(7, 2, False, 0, 1_700_000_000_000)  # aborted at 5
    txn2 = rec.build_batch([(None, b"t2")], base_offset=6, producer_id=7, producer_epoch=2, base_sequence=2,
                           transactional=True)
    log.producers.record_append(7, 2, 2, 2, 6, 6, 0, 0, True)
    log.append(stored_batch(memoryview(txn2), 6, 0))  # open when the process ends
    _append(log, 2, pid=9, seq=0)  # 7-8, idempotent
    log.close()
    back = PartitionLog("t", 0, 0, [0])
    top = loading.read_partition(back, str(tmp_path / "t-0"), 0, writable=False)
    assert top == 9
    assert back.last_stable_offset == 6  # the open transaction holds it
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in back.producers.aborted] == [(7, 3, 5)]
    duplicate = back.producers.duplicate_of(9, 0, 0, 1)  # a retry after the restart: answered with its offset
    assert duplicate is not None and duplicate.first_offset == 7
    back.append_marker(7, 2, True, 0, 1_700_000_000_000)
    assert back.last_stable_offset == back.next_offset == 10
