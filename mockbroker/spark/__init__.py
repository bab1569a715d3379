"""The Spark data source for Kafka-protocol topics (``pip install "mockbroker[spark]"``).

    from mockbroker.spark import register, ship
    register(spark)                 # format "mockbroker": batch/stream reads and writes
    ship(spark)                     # the same, on a cluster whose executors lack mockbroker (sends an archive)
"""

from __future__ import annotations

from typing import Any


class ExecutorSetupError(RuntimeError):
    """Spark's executors cannot run the data source (no Python, or one without mockbroker or pyarrow)."""


def register(spark: Any, check: bool = True) -> None:
    """Register the ``mockbroker`` format with a SparkSession.  With ``check`` (the default), a one-task job
    per executor slot first makes sure the executors' Python can import the data source, and raises
    ExecutorSetupError with one line saying what is missing instead of failing later inside a Java trace."""
    from mockbroker.spark.archive import on_planner_path
    from mockbroker.spark.preflight import executor_problem
    from mockbroker.spark.source import MockbrokerDataSource

    try:
        on_planner_path(spark.sparkContext)
    except Exception:  # Spark Connect: no SparkContext here
        pass
    if check:
        problem = executor_problem(spark)
        if problem:
            raise ExecutorSetupError(problem)
    spark.dataSource.register(MockbrokerDataSource)


def ship(spark: Any, check: bool = True) -> Any:
    """Send mockbroker to the executors as an archive, then register the format (see mockbroker.spark.archive)."""
    from mockbroker.spark.archive import ship as ship_archive

    return ship_archive(spark, check=check)
