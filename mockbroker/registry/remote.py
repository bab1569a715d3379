"""A registry whose ``_schemas`` lives on another process's cluster: cp-schema-registry's setting
``kafkastore.bootstrap.servers`` (``mockbroker serve --kafka-env`` with only ``SCHEMA_REGISTRY_*`` variables, as a
compose file's schema-registry service).  As Confluent's registry does, it waits for the cluster (up to
``kafkastore.init.timeout.ms``, 60 s) and creates ``_schemas`` (one partition, compacted) when missing."""

from __future__ import annotations

import time
from collections.abc import Callable

from mockbroker.client import KafkaClient
from mockbroker.client.connection import BrokerError
from mockbroker.protocol import api
from mockbroker.registry.store import TOPIC, TOPIC_CONFIGS

CREATE_TOPICS = 19
TOPIC_ALREADY_EXISTS = 36
INIT_TIMEOUT_S = 60.0  # Confluent's kafkastore.init.timeout.ms


class StoreUnreachable(RuntimeError):
    """The cluster did not answer within the init timeout, or refused to create ``_schemas``: one line."""


def create_schemas_topic(bootstrap: str, timeout: float = INIT_TIMEOUT_S,
                         stop: Callable[[], bool] = lambda: False) -> bool:
    """Create ``_schemas`` on the cluster at ``bootstrap`` unless it is there; retried while the cluster is not
    reachable yet (a compose file starts both services at once).  False when ``stop()`` said to give up."""
    deadline = time.monotonic() + timeout
    last = ""
    while not stop():
        try:
            with KafkaClient(bootstrap, client_id="mockbroker-schema-registry", timeout=5.0) as client:
                if TOPIC in client.topics():
                    return True
                _create(client)
                return True
        except (BrokerError, OSError) as exc:
            last = str(exc)
        if time.monotonic() >= deadline:
            raise StoreUnreachable(f"kafkastore.bootstrap.servers {bootstrap}: no answer within {timeout:g} s "
                                   f"(kafkastore.init.timeout.ms): {last}")
        time.sleep(0.25)
    return False


def _create(client: KafkaClient) -> None:
    m = api.request_module(CREATE_TOPICS)
    topic = m.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=-1,
                             configs=[m.CreatableTopicConfig(name=k, value=v) for k, v in TOPIC_CONFIGS.items()])
    answer = client.request_any(CREATE_TOPICS, 7, m.CreateTopicsRequest(topics=[topic], timeout_ms=30000))
    for result in answer.topics:
        if result.error_code not in (0, TOPIC_ALREADY_EXISTS):
            raise StoreUnreachable(f"kafkastore.bootstrap.servers: creating {TOPIC} failed: error {result.error_code} "
                                   f"{result.error_message or ''}".rstrip())
