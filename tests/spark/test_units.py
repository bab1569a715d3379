"""Pieces of the Spark data source that need no Spark: Kafka's murmur2 partitioner, option parsing, the
backlog split of maxOffsetsPerTrigger, the column decoder against the general record decoder, and the
placeholder task pyspark runs when the source planned nothing (an empty topic)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker import records as rec
from mockbroker.client.partitioner import murmur2, partition_for_key
from mockbroker.spark.columns import decode_columns, encode_columns
from mockbroker.spark.options import OptionError, canonical, parse_source
from mockbroker.spark.source import BatchReader, StreamReader, _split_by_backlog


def test_murmur2_matches_kafkas_test_vectors() -> None:
    # from Kafka's UtilsTest.testMurmur2
    vectors = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
               b"a-little-bit-longer-string": -1486304829,
               b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    assert {k: murmur2(k) for k in vectors} == vectors
    assert all(0 <= partition_for_key(k, 7) < 7 for k in vectors)


def test_backlog_split_is_proportional_and_exact() -> None:
    begin = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    end = {("t", 0): 900, ("t", 1): 200, ("t", 2): 50}
    split = _split_by_backlog(begin, end, 100)
    assert sum(split[tp] - begin[tp] for tp in begin) == 100
    assert split == {("t", 0): 90, ("t", 1): 110, ("t", 2): 50}
    assert _split_by_backlog(begin, end, 10_000) == end


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "t"}, "kafka.bootstrap.servers is required"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "subscribepattern": "x"}, "exactly one of"),
    ({"kafka.bootstrap.servers": "h:1", "subscribepattern": "("}, "not a regular expression"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "maxoffsetspertrigger": "0"}, "at least 1"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "includeheaders": "yes"}, "true or false"),
    ({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "startingoffsets": "{bad"}, "startingOffsets must be"),
])
def test_option_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_source(options, streaming=False)


def test_options_are_read_case_insensitively_as_spark_hands_them_over() -> None:
    opts = parse_source({"kafka.bootstrap.servers": "h:1", "assign": '{"t":[2,0]}', "includeheaders": "true",
                         "kafka.isolation.level": "READ_COMMITTED", "minpartitions": "4"}, streaming=True)
    assert (opts.assign, opts.include_headers, opts.isolation_level, opts.min_partitions) == ({"t": [0, 2]}, True, 1, 4)
    assert list(canonical({"b": {"10": 1, "2": 2}, "a": {"0": 3}})) == ["a", "b"]
    assert list(canonical({"b": {"10": 1, "2": 2}})["b"]) == ["2", "10"]


record = st.tuples(st.none() | st.binary(max_size=300), st.none() | st.binary(max_size=20_000),
                   st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=10)), max_size=3),
                   st.integers(min_value=1_700_000_000_000, max_value=1_700_100_000_000))


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=40))
def test_column_decoder_agrees_with_the_record_decoder(items: list[tuple]) -> None:
    data = rec.build_batch(items)
    header, records = rec.decode_batch(data)
    keys: list = []
    values: list = []
    deltas: list[int] = []
    ts: list[int] = []
    headers: list = []
    decode_columns(bytes(data), rec.HEADER_SIZE, header.record_count, keys, values, deltas, ts, headers)
    assert keys == [None if r.key is None else bytes(r.key) for r in records]
    assert values == [None if r.value is None else bytes(r.value) for r in records]
    assert deltas == [r.offset_delta for r in records] and ts == [r.timestamp_delta for r in records]
    assert headers == [[{"key": k, "value": None if v is None else bytes(v)} for k, v in r.headers] for r in records]


@settings(max_examples=60, deadline=None)
@given(st.lists(record, min_size=1, max_size=40), st.sampled_from([rec.NONE, rec.GZIP, rec.ZSTD]))
def test_column_encoder_makes_batches_the_record_decoder_reads(items: list[tuple], codec: int) -> None:
    base = min(i[3] for i in items)
    body = encode_columns([i[0] for i in items], [i[1] for i in items], [i[2] for i in items],
                          [i[3] - base for i in items])
    data = rec.batch_from_body(body, len(items), len(items) - 1, base, max(i[3] for i in items), compression=codec,
                               producer_id=7, producer_epoch=0, base_sequence=3)
    header, records = rec.decode_batch(data)
    assert (header.record_count, header.base_sequence, header.compression) == (len(items), 3, codec)
    assert [(None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value),
             [(k, None if v is None else bytes(v)) for k, v in r.headers], base + r.timestamp_delta)
            for r in records] == [(k, v, list(h), t) for k, v, h, t in items]


def test_the_placeholder_of_an_empty_plan_reads_no_rows() -> None:
    """pyspark runs one task with InputPartition(None) when partitions() returns [] (nothing to read)."""
    from pyspark.sql.datasource import InputPartition

    options = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"}
    assert list(BatchReader(parse_source(options, streaming=False)).read(InputPartition(None))) == []
    assert list(StreamReader(parse_source(options, streaming=True)).read(InputPartition(None))) == []
    with pytest.raises(TypeError, match="planned no InputPartition"):
        list(BatchReader(parse_source(options, streaming=False)).read(InputPartition("elsewhere")))
