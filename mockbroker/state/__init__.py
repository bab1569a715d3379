"""Broker state: cluster, topics, partition logs, configuration and clocks.

Plain synchronous Python with no knowledge of the wire format; raises KafkaError with Kafka codes.
"""
