"""One local[2] SparkSession per test module (a cold start costs ~5 s), with everything Spark writes
kept under pytest's temporary directory."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'mockbroker[spark]')")


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from pyspark.sql import SparkSession

    from mockbroker.spark import register

    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers must import mockbroker from this environment
    local: Path = tmp_path_factory.mktemp("spark-local")
    session = (SparkSession.builder.master("local[2]").appName("mockbroker-tests")
               .config("spark.local.dir", str(local)).config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.warehouse.dir", str(local / "warehouse"))
               .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={local}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python with pyspark, pyarrow and the codecs but without mockbroker, for executors (as on a cluster)."""
    from tests.spark.executor_python import make_executor_python

    return make_executor_python(tmp_path_factory.mktemp("executor-python"))


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Spark standalone cluster on 127.0.0.1: a master and two workers of two cores, each its own JVM.
    Each application caps itself at two cores (spark.cores.max), so two can run side by side."""
    from mockbroker.spark.standalone import StandaloneCluster

    cluster = StandaloneCluster(workers=2, cores=2, memory="4g", work_dir=tmp_path_factory.mktemp("standalone"))
    cluster.start()
    yield cluster
    cluster.stop()
    assert not cluster.pids()
