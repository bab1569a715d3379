"""A drop-in for testcontainers-python's Kafka and Redpanda modules, in-process (no Docker).

Change the import lines and nothing else::

    from testcontainers.community.kafka import KafkaContainer, RedpandaContainer, kafka_config
    from testcontainers.core.network import Network
    # becomes
    from mockbroker.testcontainers import KafkaContainer, RedpandaContainer, Network, kafka_config

Each container object owns a :class:`~mockbroker.cluster.MockCluster` from ``start()`` to ``stop()``;
``.cluster`` is that cluster (faults, journal, console).  See docs/testcontainers.md.
"""

from mockbroker.testcontainers.container import Network
from mockbroker.testcontainers.kafka import KafkaContainer, RedpandaContainer, kafka_config

__all__ = ["KafkaContainer", "Network", "RedpandaContainer", "kafka_config"]
