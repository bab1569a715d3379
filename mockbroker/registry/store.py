"""Where the Schema Registry keeps what it registers: the cluster's compacted ``_schemas`` topic, in
Confluent's JSON key/value format, written over the wire (Produce, acks=all) with the project's own
client, as the real registry's producer writes it; so the journal records those Produce requests, fault
rules on Produce or on ``_schemas`` reach the registry (it answers 50001, as Confluent's does when Kafka
refuses its write), and the audit and any consumer can read the topic.  At start the registry reads the topic
back from its beginning (``read``; mockbroker.registry.replay applies it), as Confluent's does."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

from mockbroker import records as rec
from mockbroker.client import KafkaClient
from mockbroker.client.cluster import EARLIEST
from mockbroker.registry.errors import STORE_ERROR, RegistryError
from mockbroker.registry.settings import Record

TOPIC = "_schemas"
TOPIC_CONFIGS = {"cleanup.policy": "compact"}


def encode(records: list[Record]) -> list[tuple[bytes, bytes | None]]:
    """(key, value) bytes as Confluent's registry writes them: compact JSON, a null value for a tombstone."""
    return [(json.dumps(key, separators=(",", ":")).encode(),
             None if value is None else json.dumps(value, separators=(",", ":")).encode()) for key, value in records]


class SchemasTopic:
    """Writes to ``_schemas`` from a worker thread (the broker's loop goes on serving the Produce)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._client: KafkaClient | None = None
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="schema-registry-store")

    def _write(self, records: list[Record]) -> None:
        if self._client is None:
            self._client = KafkaClient(self.bootstrap, client_id="mockbroker-schema-registry", timeout=10.0)
        try:
            self._client.produce(TOPIC, 0, rec.build_batch(encode(records)), acks=-1)
        except BaseException:
            self._client.close()
            self._client = None
            raise

    def _read(self) -> list[tuple[bytes | None, bytes | None]]:
        """Every record of ``_schemas`` from its start to its end now, (key, value) bytes in offset order."""
        if self._client is None:
            self._client = KafkaClient(self.bootstrap, client_id="mockbroker-schema-registry", timeout=10.0)
        try:
            start = self._client.list_offset(TOPIC, 0, EARLIEST)
            end = self._client.latest_offset(TOPIC, 0)
            return [(None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value))
                    for batch in self._client.read_all(TOPIC, 0, start, end) if not batch.header.is_control
                    for r in batch.records]
        except BaseException:
            self._client.close()
            self._client = None
            raise

    async def read(self) -> list[tuple[bytes | None, bytes | None]]:
        """``_read`` on the store's thread (the broker's loop goes on serving the Fetch); a RegistryError (one
        line) when the cluster does not answer."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, self._read)
        except Exception as error:
            raise RegistryError(STORE_ERROR, f"Error while reading {TOPIC}: {type(error).__name__}: "
                                             f"{error}") from None

    async def write(self, records: list[Record]) -> None:
        if not records:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._write, records)
        except Exception as error:
            raise RegistryError(STORE_ERROR, f"Error while writing to {TOPIC}: {type(error).__name__}: "
                                             f"{error}") from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self._thread.shutdown(wait=False)


