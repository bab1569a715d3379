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
