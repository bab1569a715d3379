"""Codec micro-benchmark: microseconds to decode + encode a message, against peers in the same run.

Cases (the targets of issue #2):
  * ProduceRequest v9 carrying 16 KiB of records (target <= 5 us, records never copied)
  * FetchResponse v12 with 10 partitions (16 KiB of records each)

Peers: Aiven's ``kio`` (``pip install kio``), measured in the same run when it is installed.
Prints one line per (case, codec) and the ratio peer / mockbroker (> 1 means mockbroker is faster).

    python bench/codec_bench.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import io
import timeit
from collections.abc import Callable
from datetime import timedelta

from mockbroker.protocol import api

RECORDS = bytes(range(256)) * 64  # 16 KiB


def best_us(fn: Callable[[], object], seconds: float) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    repeats = max(3, int(seconds / max(timer.timeit(number) / 1, 1e-9)))
    return min(timer.repeat(repeat=min(repeats, 7), number=number)) / number * 1e6


def ours_produce() -> dict[str, Callable[[], object]]:
    m = api.request_module(0)
    body = m.ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[m.TopicProduceData(name="orders", partition_data=[m.PartitionProduceData(0, RECORDS)])],
    )
    reader, writer = m.READERS[9], m.WRITERS[9]
    out = bytearray()
    holes: list = []
    writer(body, out, holes)
    wire = memoryview(b"".join(api.assemble(out, holes)))  # the body exactly as a client sends it
    full = memoryview(api.to_bytes(api.encode_request(0, 9, 1, body, "bench"))[4:])
    decoded, _ = reader(wire, 0)
    assert decoded.topic_data[0].partition_data[0].records.obj is wire.obj  # a view, not a copy

    def body_rt() -> None:
        obj, _ = reader(wire, 0)
        holes: list = []
        writer(obj, bytearray(), holes)

    def frame_rt() -> None:
        req = api.decode_request(full)
        api.encode_request(0, 9, req.correlation_id, req.body, req.client_id)

    return {"body": body_rt, "frame": frame_rt}


def ours_fetch() -> Callable[[], object]:
    m = api.response_module(1)
    parts = [m.PartitionData(partition_index=i, high_watermark=100, records=RECORDS) for i in range(10)]
    body = m.FetchResponse(responses=[m.FetchableTopicResponse(topic="orders", partitions=parts)])
    wire = memoryview(api.to_bytes(api.encode_response(1, 12, 1, body))[4:])
    reader, writer = m.READERS[12], m.WRITERS[12]

    def rt() -> None:
        obj, _ = reader(wire, 1 + 4)  # response header v1: correlation id + tagged fields
        writer(obj, bytearray(), [])

    return rt


def kio_cases() -> dict[str, Callable[[], object]] | None:
    try:
        from kio.schema.errors import ErrorCode
        from kio.schema.fetch.v12 import response as fetch
        from kio.schema.produce.v9 import request as produce
        from kio.serial import entity_reader, entity_writer
    except ImportError:
        return None
    req = produce.ProduceRequest(
        acks=1,
        timeout=timedelta(seconds=1),
        topic_data=(
            produce.TopicProduceData(
                name="orders", partition_data=(produce.PartitionProduceData(index=0, records=RECORDS),)
            ),
        ),
    )
    pw, pr = entity_writer(produce.ProduceRequest), entity_reader(produce.ProduceRequest)
    buf = io.BytesIO()
    pw(buf, req)
    pwire = buf.getvalue()
    parts = tuple(
        fetch.PartitionData(
            partition_index=i,
            error_code=ErrorCode.none,
            high_watermark=100,
            aborted_transactions=(),
            records=RECORDS,
        )
        for i in range(10)
    )
    resp = fetch.FetchResponse(
        throttle_time=timedelta(0),
        error_code=ErrorCode.none,
        responses=(fetch.FetchableTopicResponse(topic="orders", partitions=parts),),
    )
    fw, fr = entity_writer(fetch.FetchResponse), entity_reader(fetch.FetchResponse)
    buf = io.BytesIO()
    fw(buf, resp)
    fwire = buf.getvalue()

    def produce_rt() -> None:
        pw(io.BytesIO(), pr(pwire, 0)[0])

    def fetch_rt() -> None:
        fw(io.BytesIO(), fr(fwire, 0)[0])

    return {"produce": produce_rt, "fetch": fetch_rt}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1.0, help="time budget per measurement")
    args = ap.parse_args()
    ours = ours_produce()
    produce_body = best_us(ours["body"], args.seconds)
    produce_frame = best_us(ours["frame"], args.seconds)
    fetch_body = best_us(ours_fetch(), args.seconds)
    produce = "ProduceRequest v9, 16 KiB records (body)"
    fetch = "FetchResponse v12, 10 partitions (body)"
    print(f"{'case':44} {'codec':10} {'us':>8}")
    print(f"{produce:44} {'mockbroker':10} {produce_body:8.2f}  target <= 5")
    print(f"{'ProduceRequest v9, 16 KiB records (+header)':44} {'mockbroker':10} {produce_frame:8.2f}")
    print(f"{fetch:44} {'mockbroker':10} {fetch_body:8.2f}")
    peers = kio_cases()
    if peers is None:
        print("kio is not installed: no peer measured (pip install kio)")
        return
    kp = best_us(peers["produce"], args.seconds)
    kf = best_us(peers["fetch"], args.seconds)
    print(f"{produce:44} {'kio':10} {kp:8.2f}  kio/mockbroker {kp / produce_body:.2f}x")
    print(f"{fetch:44} {'kio':10} {kf:8.2f}  kio/mockbroker {kf / fetch_body:.2f}x")


if __name__ == "__main__":
    main()
