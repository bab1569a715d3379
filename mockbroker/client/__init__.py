"""A small blocking Kafka client built on the project's codec (for Spark executors and the audit)."""

from mockbroker.client.cluster import EARLIEST, LATEST, KafkaClient, KafkaClientError
from mockbroker.client.connection import BrokerError

__all__ = ["EARLIEST", "LATEST", "BrokerError", "KafkaClient", "KafkaClientError"]
