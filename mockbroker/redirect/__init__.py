"""mock_kafka: moto-style redirection of every Python Kafka client to a mock cluster (docs/mock-kafka.md).

    from mockbroker import mock_kafka

    @mock_kafka                                   # or @mock_kafka(topics={"orders": 3}, brokers=3)
    def test_orders():
        app.run()            # its Producer({"bootstrap.servers": "kafka.prod.internal:9092"}) reaches the mock

    with mock_kafka() as cluster:                 # the MockCluster: faults, journal, topics
        ...

While active, confluent-kafka's, kafka-python's and aiokafka's clients (and confluent-kafka's Schema Registry
clients) constructed anywhere in the process go to the innermost active cluster, whatever servers they name.

Modules: mock (MockKafka, the decorator / context manager), patches (the per-library patch tables),
rewrite (the pure configuration rewriting), active (the stack of active targets), swap (rebinding a C type's
module-level names across sys.modules).
"""

from mockbroker.redirect.mock import MockKafka, active_cluster, mock_kafka

__all__ = ["MockKafka", "active_cluster", "mock_kafka"]
