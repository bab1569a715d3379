"""A data directory with real clients (confluent-kafka) over real sockets: topics, configs and records
survive a restart on the same folder (MockCluster stopped, a new one made with the same data_dir); a
second cluster on a folder in use is refused; DeleteRecords, retention and topic deletion free the
files; the metadata is on disk before an admin call's answer comes back."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from mockbroker.cluster import MockCluster
from mockbroker.store import segment_files as files


def _produce(bootstrap: str, topic: str, count: int, partition: int = 0, per_batch: int = 0,
             timestamp: int = 0) -> None:
    """``count`` records (``per_batch``: a flush after each so many, so each is a batch of its own)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 2})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % (i % 7), value=b"value-%d" % i, partition=partition,
                         timestamp=timestamp + i if timestamp else 0)
        if per_batch and (i + 1) % per_batch == 0:
            assert producer.flush(15) == 0
    assert producer.flush(15) == 0


def _consume(bootstrap: str, topic: str, partitions: int, want: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(values) < want and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            values.append(bytes(msg.value()))
    consumer.close()
    return values


def _admin(cluster: MockCluster) -> Any:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def _logs(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(files.SUFFIX)) if folder.exists() else []


def test_topics_configs_and_records_survive_a_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with MockCluster(data_dir=data_dir) as cluster:
        admin = _admin(cluster)
        futures = admin.create_topics([NewTopic("kept", 3, 1, config={"retention.ms": "123456789"})],
                                      request_timeout=10)
        futures["kept"].result(timeout=10)
        # on disk before the answer came back
        saved = json.loads((data_dir / "metadata.json").read_text())
        assert "kept" in json.dumps(saved)
        for p in range(3):
            _produce(cluster.bootstrap_servers, "kept", 50, p)
        topic_id = cluster.state.topics["kept"].topic_id
        epochs = [p.leader_epoch for p in cluster.state.topics["kept"].partitions]
    with MockCluster(data_dir=data_dir) as cluster:
        topic = cluster.state.topics["kept"]
        assert topic.topic_id == topic_id
        assert [p.leader_epoch for p in topic.partitions] == [e + 1 for e in epochs]  # a restart is an election
        admin = _admin(cluster)
        configs = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "kept")])
        described = next(iter(configs.values())).result(timeout=10)
        assert described["retention.ms"].value == "123456789"
        values = _consume(cluster.bootstrap_servers, "kept", 3, 150)
        assert sorted(values) == sorted(b"value-%d" % i for i in range(50) for _p in range(3))
        _produce(cluster.bootstrap_servers, "kept", 10)  # and it goes on where it was
        assert cluster.state.topics["kept"].partitions[0].next_offset == 60


def test_acls_and_scram_users_survive_a_restart(tmp_path: Path) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    data_dir = tmp_path / "data"
    # the authorizer is static configuration (server.properties), given again at each start as Kafka's is
    config = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}
    binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    with MockCluster(data_dir=data_dir, config=config) as cluster:
        admin = _admin(cluster)
        admin.create_acls([binding])[binding].result(timeout=10)
        upsert = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                              b"secret")
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=10)
    with MockCluster(data_dir=data_dir, config=config) as cluster:
        admin = _admin(cluster)
        from confluent_kafka.admin import AclBindingFilter

        match = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                 AclPermissionType.ANY)
        assert binding in admin.describe_acls(match).result(timeout=10)
        users = admin.describe_user_scram_credentials(["bob"])
        infos = users["bob"].result(timeout=10).scram_credential_infos
        assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 4096)]


def test_a_second_cluster_on_a_folder_in_use_is_refused(tmp_path: Path) -> None:
    with MockCluster(data_dir=tmp_path / "data"):
        with pytest.raises(ValueError, match="in use by another live process"):
            MockCluster(data_dir=tmp_path / "data")
    with MockCluster(data_dir=tmp_path / "data"):  # stopped: free again
        pass


def test_delete_records_and_topic_deletion_free_the_files(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with MockCluster(data_dir=data_dir, config={"log.segment.bytes": "2000"}) as cluster:
        admin = _admin(cluster)
        admin.create_topics([NewTopic("gone", 1, 1), NewTopic("trim", 1, 1)])["trim"].result(timeout=10)
        _produce(cluster.bootstrap_servers, "trim", 300, per_batch=30)
        _produce(cluster.bootstrap_servers, "gone", 10)
        folder = data_dir / "trim-0"
        before = _logs(folder)
        assert len(before) > 2
        end = cluster.state.topics["trim"].partitions[0].next_offset
        done = admin.delete_records([TopicPartition("trim", 0, end)])
        next(iter(done.values())).result(timeout=10)
        assert _logs(folder) == []  # everything below the new log start went
        admin.delete_topics(["gone"])["gone"].result(timeout=10)
        assert not (data_dir / "gone-0").exists()
        assert "gone" not in (data_dir / "metadata.json").read_text()
    with MockCluster(data_dir=data_dir) as cluster:
        log = cluster.state.topics["trim"].partitions[0]
        assert (log.log_start_offset, log.next_offset) == (end, end)
        assert "gone" not in cluster.state.topics


def test_retention_frees_the_files(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with MockCluster(data_dir=data_dir, config={"log.retention.check.interval.ms": "100"}) as cluster:
        admin = _admin(cluster)
        admin.create_topics([NewTopic("old", 1, 1, config={"segment.bytes": "2000"})])["old"].result(timeout=10)
        _produce(cluster.bootstrap_servers, "old", 200, per_batch=20, timestamp=1_000_000)  # from long ago
        assert len(_logs(data_dir / "old-0")) > 2
        resource = ConfigResource(ConfigResource.Type.TOPIC, "old", incremental_configs=[
            ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
        next(iter(admin.incremental_alter_configs([resource]).values())).result(timeout=10)
        deadline = time.monotonic() + 10
        while _logs(data_dir / "old-0") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _logs(data_dir / "old-0") == []


def test_reset_empties_the_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with MockCluster(data_dir=data_dir, topics={"t": 1}) as cluster:
        _produce(cluster.bootstrap_servers, "t", 20)
        _produce(cluster.bootstrap_servers, "other", 5)  # auto-created
        assert (data_dir / "other-0").exists()
        cluster.reset()
        assert not (data_dir / "other-0").exists()
        assert _logs(data_dir / "t-0") == []  # the initial topic again, empty
    with MockCluster(data_dir=data_dir) as cluster:
        assert sorted(cluster.state.topics) == ["t"]
        assert cluster.state.topics["t"].partitions[0].next_offset == 0


def test_the_c_produce_lane_stays_on_and_writes_before_answering(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Produce to a data directory goes through the C lane (the Python handler is never called), whose
    appends call DurableLog.append: each batch is in its file when the answer comes back."""
    from mockbroker.handlers import k00_produce, produce_lane

    if not produce_lane.available():
        pytest.skip("the C produce lane is not built here")
    handled: list[int] = []
    original = k00_produce._append
    monkeypatch.setattr(k00_produce, "_append", lambda *a: handled.append(1) or original(*a))
    data_dir = tmp_path / "data"
    with MockCluster(data_dir=data_dir, topics={"fast": 1}) as cluster:
        _produce(cluster.bootstrap_servers, "fast", 200, per_batch=20)
        log = cluster.state.topics["fast"].partitions[0]
        on_disk = (data_dir / "fast-0" / files.file_name(0)).read_bytes()
        assert on_disk == b"".join(b"".join(bytes(x) for x in b.buffers) for b in log.batches)
        assert len(log.batches) >= 10 and log.next_offset == 200
    assert handled == []


def test_a_cluster_that_fails_to_be_made_leaves_the_folder_free(tmp_path: Path) -> None:
    def refused() -> str:
        try:
            MockCluster(data_dir=tmp_path / "data", seed={"t": str(tmp_path / "missing.jsonl")})
        except ValueError as exc:  # (not pytest.raises: its record of the frames would keep the cluster)
            return str(exc)
        return ""

    assert "missing.jsonl" in refused()
    with MockCluster(data_dir=tmp_path / "data"):
        pass


def test_seed_data_is_loaded_into_a_new_data_dir_only(tmp_path: Path) -> None:
    seed_file = tmp_path / "orders.jsonl"
    seed_file.write_text('{"key": "a", "value": "one"}\n{"key": "b", "value": "two"}\n')
    data_dir = tmp_path / "data"
    for _start in range(2):  # the second start finds the seeded records in the folder: not written again
        with MockCluster(data_dir=data_dir, topics={"orders": 1}, seed={"orders": str(seed_file)}) as cluster:
            consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                                 "enable.auto.commit": False})
            consumer.assign([TopicPartition("orders", 0, 0)])
            values = [m.value() for m in consumer.consume(2, 10) if not m.error()]
            high = consumer.get_watermark_offsets(TopicPartition("orders", 0), timeout=10)[1]
            consumer.close()
            assert (values, high) == ([b"one", b"two"], 2)
