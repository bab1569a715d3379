"""The data source on a real Spark standalone cluster (a master and two workers on 127.0.0.1, each its own
JVM) whose executors run a Python without mockbroker: register() says so in one line, ship() sends the
package as an archive (spark.archives), batch reads and writes match confluent-kafka record for record, and a
Structured Streaming query killed mid-batch restarts from its checkpoint with every record once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker.cluster import MockCluster
from mockbroker.spark import ExecutorSetupError, register, ship
from mockbroker.spark.standalone import StandaloneCluster

pytestmark = [pytest.mark.spark, pytest.mark.spark_cluster, pytest.mark.clients, pytest.mark.slow]
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=2, topics={"orders": 3, "stream": 2}) as running:
        yield running


@pytest.fixture(scope="module")
def session(standalone: StandaloneCluster, executor_python: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Any]:
    """A driver in this process on the cluster; its executors run ``executor_python`` (no mockbroker)."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = str(executor_python)
    local = tmp_path_factory.mktemp("cluster-driver")
    spark = (SparkSession.builder.master(standalone.master_url).appName("mockbroker-cluster-tests")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.cores.max", "2").config("spark.local.dir", str(local))
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()
    os.environ["PYSPARK_PYTHON"] = sys.executable


def produce(cluster: MockCluster, topic: str, count: int, partitions: int) -> None:
    if topic not in cluster.state.topics:
        cluster.create_topic(topic, partitions)
    failed: list[str] = []
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
    for i in range(count):
        p.produce(topic, f"{topic}-{i}".encode(), key=f"k{i}".encode(), partition=i % partitions,
                  on_delivery=lambda err, _msg: failed.append(str(err)) if err else None)
    assert p.flush(30) == 0
    assert not failed, failed[:3]


def test_executors_are_separate_jvms_on_the_workers(session: Any) -> None:
    deadline = time.monotonic() + 60
    while True:  # executors register a moment after the session starts
        infos = session.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
        hosts = sorted(f"{info.host()}:{info.port()}" for info in infos)
        if len(hosts) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert len(hosts) == 3, hosts  # the driver and one executor on each worker (spark.cores.max=2, spread out)
    python = session.sparkContext.parallelize(range(2), 2).map(lambda _: sys.executable).collect()
    assert set(python) == {str(Path(session.sparkContext.pythonExec))}


def test_register_says_the_executors_lack_mockbroker(session: Any, executor_python: Path) -> None:
    with pytest.raises(ExecutorSetupError) as refused:
        register(session)
    message = str(refused.value)
    assert "\n" not in message and "Traceback" not in message
    assert f"their Python ({executor_python}, 3." in message
    assert "No module named 'mockbroker'" in message and "mockbroker.spark.ship(spark)" in message


def test_shipped_batch_read_and_write(session: Any, cluster: MockCluster) -> None:
    produce(cluster, "orders", 3000, 3)
    path = ship(session)
    assert path.suffix == ".zip"
    df = (session.read.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
          .option("subscribe", "orders").load())
    rows = df.selectExpr("CAST(value AS STRING) AS value", "partition", "offset").collect()
    assert sorted((r.partition, r.offset, r.value) for r in rows) == sorted(
        (i % 3, i // 3, f"orders-{i}") for i in range(3000))
    (df.selectExpr("key", "value").write.format("mockbroker").option("kafka.bootstrap.servers",
     cluster.bootstrap_servers).option("topic", "copied").mode("append").save())
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["copied"])
    seen: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(seen) < 3000 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append(msg.value())
    consumer.close()
    assert sorted(seen) == sorted(f"orders-{i}".encode() for i in range(3000))


def _errors(output: bytes) -> str:
    """The lines of a driver's output that say what went wrong (Spark's stack frames left out)."""
    lines = output.decode(errors="replace").splitlines()
    return "\n".join(line for line in lines if ("Error" in line or "Exception" in line)
                     and not line.lstrip().startswith("at "))[-4000:]


def _files(folder: Path) -> list[int]:
    return sorted(int(f.name) for f in folder.iterdir() if f.name.isdigit()) if folder.exists() else []


def test_a_streaming_query_killed_mid_batch_restarts_from_its_checkpoint(
        standalone: StandaloneCluster, cluster: MockCluster, executor_python: Path, tmp_path: Path) -> None:
    total = 60_000  # 15 triggers of 4,000
    produce(cluster, "stream", total, 2)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    env = {**os.environ, "PYSPARK_PYTHON": str(executor_python)}
    args = [sys.executable, str(HERE / "stream_job.py"), standalone.master_url, cluster.bootstrap_servers,
            str(out), str(checkpoint)]
    job = subprocess.Popen([*args, "run"], env=env, cwd=tmp_path, start_new_session=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and job.poll() is None:
            commits, planned = _files(checkpoint / "commits"), _files(checkpoint / "offsets")
            if len(commits) >= 2 and planned and planned[-1] > commits[-1]:
                break  # a batch is planned and not committed: kill the driver in the middle of it
            time.sleep(0.05)
        assert job.poll() is None, _errors(job.stdout.read() if job.stdout else b"")
        os.killpg(job.pid, signal.SIGKILL)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    killed_at = len(_files(checkpoint / "commits"))
    assert killed_at < total // 4000, "the query finished before it could be killed"
    drain = subprocess.run([*args, "drain"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert drain.returncode == 0, drain.stdout[-3000:] + drain.stderr[-3000:]
    rows = json.loads((tmp_path / "out.json").read_text())
    expected = sorted([i % 2, i // 2, f"stream-{i}"] for i in range(total))
    assert len(rows) == total, f"{len(rows) - len({(p, o) for p, o, _ in rows})} duplicates"
    assert sorted(rows) == expected  # no gap, no duplicate across the kill
    assert len(_files(checkpoint / "commits")) > killed_at


SUBMITTED_APP = """
import sys
from pyspark.sql import SparkSession
from mockbroker.spark import register

bootstrap = sys.argv[1]
spark = SparkSession.builder.getOrCreate()
register(spark)  # the archive came with --archives: register finds it and checks the executors
read = spark.read.format("mockbroker").option("kafka.bootstrap.servers", bootstrap).option("subscribe", "submitted")
stream = (spark.readStream.format("mockbroker").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", "submitted").option("startingOffsets", "earliest").load())
query = stream.writeStream.format("memory").queryName("seen").trigger(availableNow=True).start()
query.awaitTermination()
print("batch", read.load().count(), "streamed", spark.sql("SELECT count(*) FROM seen").collect()[0][0])
spark.stop()
"""


def test_spark_submit_with_the_archive(standalone: StandaloneCluster, cluster: MockCluster, executor_python: Path,
                                       tmp_path: Path) -> None:
    from mockbroker.spark.standalone import spark_home

    produce(cluster, "submitted", 500, 2)
    made = subprocess.run([sys.executable, "-m", "mockbroker.spark.archive", "mockbroker.zip"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    (tmp_path / "app.py").write_text(SUBMITTED_APP)
    env = {**os.environ, "PYSPARK_PYTHON": str(executor_python), "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run([str(spark_home() / "bin" / "spark-submit"), "--master", standalone.master_url,
                           "--archives", "mockbroker.zip#mockbroker", "--conf", "spark.cores.max=2",
                           "--conf", "spark.ui.enabled=false", "app.py", cluster.bootstrap_servers],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, _errors((done.stdout + done.stderr).encode())
    assert "batch 500 streamed 500" in done.stdout


def test_stopping_the_cluster_leaves_no_jvm(tmp_path: Path) -> None:
    with StandaloneCluster(workers=1, work_dir=tmp_path) as small:
        pids = small.pids()
        assert len(pids) == 2
    assert not small.pids()
    still = [cmdline.parent.name for cmdline in Path("/proc").glob("[0-9]*/cmdline")
             if str(tmp_path).encode() in _read(cmdline)]
    assert still == [], f"JVMs left running: {still}"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended while we looked
        return b""
