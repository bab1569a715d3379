"""The Spark data source for Kafka-protocol topics (``pip install "mockbroker[spark]"``).

    from mockbroker.spark import register
    register(spark)                 # format "mockbroker": batch/stream reads and writes
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``mockbroker`` format with a SparkSession."""
    from mockbroker.spark.source import MockbrokerDataSource

    spark.dataSource.register(MockbrokerDataSource)
