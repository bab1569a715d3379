"""Kafka's ``socket.send.buffer.bytes`` / ``socket.receive.buffer.bytes`` on the broker's sockets.

Set, they become SO_SNDBUF on every accepted socket and SO_RCVBUF on the listening socket (accepted
sockets inherit it, so the TCP window is sized from it), as Kafka's SocketServer does; Linux reports
twice the value asked for. -1, the mock's default (Kafka's is 102400), leaves the OS's own buffers.
A confluent-kafka producer and consumer move 1 MiB messages through 8 KiB buffers.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients
MiB = 1024 * 1024


@contextmanager
def _accepted(cluster: MockCluster) -> Iterator[socket.socket]:
    """The broker's side of a fresh connection."""
    port = cluster.brokers[0].port
    before = set(cluster.brokers[0].connections)
    with socket.create_connection(("127.0.0.1", port)):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            new = set(cluster.brokers[0].connections) - before
            if new:
                conn = new.pop()
                assert conn.transport is not None
                yield conn.transport.get_extra_info("socket")
                return
            time.sleep(0.01)
        raise AssertionError("the broker never accepted the connection")


def _sizes(sock: socket.socket) -> tuple[int, int]:
    return (sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))


def _os_default_sizes() -> tuple[int, int]:
    """SO_SNDBUF / SO_RCVBUF of a socket accepted by a plain listening socket, nothing set."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname()):
            accepted, _ = server.accept()
            with accepted:
                return _sizes(accepted)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux doubles SO_SNDBUF/SO_RCVBUF; others differ")
def test_configured_buffers_are_set_on_accepted_sockets() -> None:
    config = {"socket.send.buffer.bytes": 65536, "socket.receive.buffer.bytes": 32768}
    with MockCluster(brokers=1, config=config) as cluster, _accepted(cluster) as sock:
        assert _sizes(sock) == (2 * 65536, 2 * 32768)


def test_the_default_leaves_the_os_buffers() -> None:
    with MockCluster(brokers=1) as cluster, _accepted(cluster) as sock:
        assert cluster.state.config["socket.send.buffer.bytes"] == -1
        assert _sizes(sock) == _os_default_sizes()


def test_a_client_moves_1_mib_messages_through_small_buffers() -> None:
    config = {"socket.send.buffer.bytes": 8192, "socket.receive.buffer.bytes": 8192,
              "message.max.bytes": 4 * MiB}
    with MockCluster(brokers=1, config=config, topics={"big": 2}) as cluster:
        values = [bytes([i]) * MiB for i in range(6)]
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.max.bytes": 4 * MiB,
                             "linger.ms": 5})
        for i, value in enumerate(values):
            producer.produce("big", value, partition=i % 2)
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                             "enable.auto.commit": False, "fetch.message.max.bytes": 4 * MiB})
        consumer.assign([TopicPartition("big", p, 0) for p in range(2)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < len(values) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer.close()
        assert sorted(got) == sorted(values)
