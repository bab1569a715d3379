"""What a Spark job meets before it can run, said in one line: no Java or too old a Java (``mockbroker
audit`` exits 2 before Spark starts), executors on local[2] whose Python cannot start or lacks mockbroker
(register() raises ExecutorSetupError instead of a Python traceback inside a Java stack trace), a bad
``--conf``, a broker that cannot be reached or lacks a topic (exit 2 before Spark starts), and the archive
command's refusals."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.spark import ExecutorSetupError, register
from mockbroker.spark.preflight import java_problem

pytestmark = [pytest.mark.spark]


def fake_java(folder: Path, says: str) -> Path:
    home = folder / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{says}' >&2\n")
    java.chmod(0o755)
    return home


def test_java_17_or_newer_passes() -> None:
    assert java_problem() is None  # this machine's Java 17


@pytest.mark.parametrize(("says", "expected"), [
    ('openjdk version "11.0.22" 2024-01-16', "is Java 11"),
    ('java version "1.8.0_402"', "is Java 8"),
    ("no version here", "did not say its version"),
])
def test_an_old_or_odd_java_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, says: str,
                                     expected: str) -> None:
    monkeypatch.setenv("JAVA_HOME", str(fake_java(tmp_path, says)))
    problem = java_problem()
    assert problem is not None and expected in problem and "Java 17" in problem


def test_no_java_at_all(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    problem = java_problem()
    assert problem is not None and "there is no java on JAVA_HOME=" in problem


def _audit(*args: str, env: dict[str, str] | None = None, bootstrap: str = "127.0.0.1:1",
           topic: str = "t") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockbroker", "audit", "--bootstrap-server", bootstrap,
                           "--topic", topic, *args], capture_output=True, text=True, timeout=60,
                          env=env or dict(os.environ))


def test_the_audit_without_java_says_so_before_spark_starts(tmp_path: Path) -> None:
    done = _audit(env={**os.environ, "JAVA_HOME": str(fake_java(tmp_path, 'openjdk version "11.0.2"'))})
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert done.stderr.startswith("mockbroker audit: Spark 4 needs Java 17 or newer") and "Java 11" in done.stderr


def test_the_audit_refuses_a_conf_that_is_not_key_value() -> None:
    done = _audit("--conf", "spark.executor.memory")
    assert done.returncode == 2
    assert done.stderr.strip() == ("mockbroker audit: --conf 'spark.executor.memory' is not KEY=VALUE "
                                   "(e.g. --conf spark.executor.memory=4g)")


def test_the_audit_against_an_unreachable_broker_says_so_before_spark_starts() -> None:
    with socket.socket() as bound:  # bound, not listening: a connection is refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        done = _audit(bootstrap=f"127.0.0.1:{port}")
    assert done.returncode == 2  # could not run (1 is "found problems")
    assert done.stderr == (f"mockbroker audit: error: argument --bootstrap-server: cannot connect to 127.0.0.1:{port}: "
                           "Connection refused\n")
    assert done.stdout == ""


def test_the_audit_names_a_topic_the_broker_lacks() -> None:
    with MockCluster(topics={"orders": 1}) as cluster:
        bootstrap = cluster.bootstrap_servers
        done = _audit(bootstrap=bootstrap, topic="ordres")
    assert done.returncode == 2
    assert done.stderr == (f"mockbroker audit: error: argument --topic: {bootstrap} has no topic "
                           "'ordres' (did you mean 'orders'?)\n")


def test_the_archive_command(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "mockbroker.spark.archive"]
    done = subprocess.run([*run, str(tmp_path / "mb.zip")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and f"spark-submit --archives {tmp_path / 'mb.zip'}#mockbroker" in done.stdout
    names = zipfile.ZipFile(tmp_path / "mb.zip").namelist()
    assert "__init__.py" in names and "spark/source.py" in names and "scenarios/schema.json" in names
    assert not [n for n in names if n.endswith((".pyc", ".c", ".h"))]  # sources and bytecode stay home
    for bad, says in [("mb.tar", "must end in .zip"), ("missing/mb.zip", "cannot write")]:
        done = subprocess.run([*run, str(tmp_path / bad)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1


@pytest.fixture
def local_session(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A local[2] session whose executors run the Python the test names (its parameter)."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = request.param
    spark = (SparkSession.builder.master("local[2]").appName("mockbroker-preflight")
             .config("spark.ui.enabled", "false").config("spark.local.dir", str(tmp_path)).getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    yield spark
    spark.stop()
    os.environ["PYSPARK_PYTHON"] = sys.executable


@pytest.mark.parametrize("local_session", ["/nonexistent/bin/python3"], indirect=True)
def test_local_executors_whose_python_cannot_start(local_session: Any) -> None:
    with pytest.raises(ExecutorSetupError) as refused:
        register(local_session)
    assert str(refused.value) == (
        "Spark executors could not start their Python '/nonexistent/bin/python3' (PYSPARK_PYTHON, else python3 "
        "on the executors' PATH): point PYSPARK_PYTHON at a Python with pyspark and pyarrow before the "
        "SparkSession starts")


DRIVER = """
import os, sys
from pyspark.sql import SparkSession
from mockbroker.cluster import MockCluster
from mockbroker.spark import ExecutorSetupError, register
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("OFF")
try:
    register(spark)
except ExecutorSetupError as error:
    print("refused:", error)
spark.stop()
"""


def test_local_executors_whose_python_lacks_mockbroker(executor_python: Path, tmp_path: Path) -> None:
    # a driver of its own, started away from the repository: local executors' Python workers run in the
    # driver's folder, and the repository's would make mockbroker importable from there
    done = subprocess.run([sys.executable, "-c", DRIVER], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYSPARK_PYTHON": str(executor_python)})
    refused = [line for line in done.stdout.splitlines() if line.startswith("refused:")]
    assert done.returncode == 0 and len(refused) == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"their Python ({executor_python}" in refused[0]
    assert "No module named 'mockbroker'" in refused[0] and "mockbroker.spark.ship(spark)" in refused[0]
