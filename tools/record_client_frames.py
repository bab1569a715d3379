"""Record the request frames real Kafka clients send, as golden test data for the codec.

    python tools/record_client_frames.py [--only SCENARIO] [--out tests/golden_frames]

Each scenario points one real client at a MockCluster whose dispatcher writes every request frame
(the bytes after the size prefix) to ``<out>/<scenario>/<NNN>_<Api>_v<version>.bin`` before serving
it, and checks the client got its records back.  Repeated frames of the same API, version and size
are kept at most three times (every Produce frame is kept) so the data stays small.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import mockbroker.server.broker as broker_module  # noqa: E402
from mockbroker.cluster import MockCluster  # noqa: E402
from mockbroker.protocol import api  # noqa: E402

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
RECORDS = 20


class Recorder:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0
        self.seen: Counter[tuple[int, int, int]] = Counter()
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, frame: memoryview) -> None:
        key, version, _ = api.peek_header(frame)
        sig = (key, version, len(frame))
        self.seen[sig] += 1
        if key != 0 and self.seen[sig] > 3:
            return
        self.count += 1
        name = api.api_name(key)
        (self.folder / f"{self.count:03d}_{name}_v{version}.bin").write_bytes(bytes(frame))


def recording(recorder: Recorder) -> Callable[[], None]:
    """Patch the broker's dispatch to record frames; returns the undo function."""
    original = broker_module.dispatch

    def spy(broker, conn, frame):  # type: ignore[no-untyped-def]
        recorder(frame)
        return original(broker, conn, frame)

    broker_module.dispatch = spy
    return lambda: setattr(broker_module, "dispatch", original)


def values(n: int = RECORDS) -> list[tuple[bytes, bytes]]:
    return [(f"key-{i}".encode(), f"value-{i}-".encode() * 3) for i in range(n)]


def confluent(bootstrap: str, info: list[str]) -> None:
    import confluent_kafka
    from confluent_kafka import Consumer, Producer, TopicPartition

    info.append(f"confluent-kafka {confluent_kafka.version()}, librdkafka {confluent_kafka.libversion()[0]}")
    for codec in CODECS:
        for acks in ("0", "1", "all"):
            p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "acks": acks, "linger.ms": 5})
            for k, v in values():
                p.produce(f"cf-{codec}", key=k, value=v, headers=[("h", b"1")], partition=0)
            assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.assign([TopicPartition(f"cf-{codec}", 0, 0) for codec in CODECS])
    got = 0
    deadline = time.monotonic() + 20
    while got < RECORDS * 3 * len(CODECS) and time.monotonic() < deadline:
        got += sum(1 for m in c.consume(500, 0.5) if m.error() is None)
    c.close()
    assert got == RECORDS * 3 * len(CODECS), got


def kafka_python(bootstrap: str, info: list[str], api_version: tuple[int, int] | None, codecs: list[str]) -> None:
    import kafka
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    info.append(f"kafka-python {kafka.__version__} api_version={api_version}")
    extra = {"api_version": api_version} if api_version else {}
    topics = []
    for codec in codecs:
        topic = f"kp-{codec}"
        topics.append(topic)
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                          linger_ms=5, **extra)
        for k, v in values():
            p.send(topic, key=k, value=v, partition=0, headers=[("h", b"1")] if api_version is None else None)
        p.flush(20)
        p.close(5)
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, **extra)
    c.assign([TopicPartition(t, 0) for t in topics])
    c.seek_to_beginning()
    got = 0
    deadline = time.monotonic() + 20
    while got < RECORDS * len(topics) and time.monotonic() < deadline:
        got += sum(len(v) for v in c.poll(timeout_ms=500).values())
    c.close()
    assert got == RECORDS * len(topics), got


async def aiokafka_scenario(bootstrap: str, info: list[str]) -> None:
    import aiokafka
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    info.append(f"aiokafka {aiokafka.__version__}")
    for codec in CODECS:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=None if codec == "none" else codec,
                             linger_ms=5)
        await p.start()
        for k, v in values():
            await p.send(f"aio-{codec}", key=k, value=v, partition=0, headers=[("h", b"1")])
        await p.flush()
        await p.stop()
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    await c.start()
    c.assign([TopicPartition(f"aio-{codec}", 0) for codec in CODECS])
    got = 0
    async with asyncio.timeout(20):
        while got < RECORDS * len(CODECS):
            got += sum(len(v) for v in (await c.getmany(timeout_ms=500)).values())
    await c.stop()


SCENARIOS: dict[str, Callable[[str, list[str]], None]] = {
    "confluent_kafka": confluent,
    "kafka_python": lambda b, i: kafka_python(b, i, None, CODECS),
    "kafka_python_0_10": lambda b, i: kafka_python(b, i, (0, 10), ["none", "gzip", "snappy", "lz4"]),
    "kafka_python_0_9": lambda b, i: kafka_python(b, i, (0, 9), ["none", "gzip", "snappy"]),
    "aiokafka": lambda b, i: asyncio.run(aiokafka_scenario(b, i)),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=sorted(SCENARIOS))
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "golden_frames")
    args = ap.parse_args()
    for name, scenario in SCENARIOS.items():
        if args.only and name != args.only:
            continue
        folder = args.out / name
        shutil.rmtree(folder, ignore_errors=True)
        recorder = Recorder(folder)
        undo = recording(recorder)
        info: list[str] = []
        try:
            with MockCluster(brokers=1, config={"num.partitions": 1}) as cluster:
                scenario(cluster.bootstrap_servers, info)
        finally:
            undo()
        (folder / "INFO.txt").write_text("\n".join(info) + "\n")
        print(f"{name}: {recorder.count} frames ({', '.join(info)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
