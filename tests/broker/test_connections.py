"""Connection behaviour: pipelined requests answered in order, slow readers, isolation, shutdown."""

from __future__ import annotations

import socket
import struct
import time

from mockbroker.cluster import MockCluster
from mockbroker.protocol import api

from .wire import WireClient, fetch_body, produce_body


def test_pipelined_requests_are_answered_in_order_even_behind_a_long_poll() -> None:
    with MockCluster(brokers=1, topics={"t": 1}) as cluster, WireClient(cluster.brokers[0].port) as c:
        m = api.request_module(3)
        first = c.send(1, 12, fetch_body("t", 0, 0, max_wait_ms=300))  # waits: no data
        second = c.send(3, 12, m.MetadataRequest(topics=None))
        third = c.send(18, 3, api.request_module(18).ApiVersionsRequest())
        start = time.monotonic()
        assert c.receive(1, 12)[0] == first
        assert time.monotonic() - start >= 0.25
        assert c.receive(3, 12)[0] == second
        assert c.receive(18, 3)[0] == third


def test_a_reader_that_never_reads_does_not_stall_other_clients() -> None:
    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        port = cluster.brokers[0].port
        with WireClient(port) as w:
            w.call(0, 9, produce_body(9, "t", 0, _batch(400_000)))
        slow = socket.create_connection(("127.0.0.1", port))
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        frame = api.to_bytes(api.encode_request(1, 12, 1, fetch_body("t", 0, 0)))
        for _ in range(200):  # ~80 MB of answers that are never read
            slow.sendall(frame)
        with WireClient(port) as other:
            start = time.monotonic()
            for _ in range(20):
                assert other.call(1, 12, fetch_body("t", 0, 0)).responses[0].partitions[0].high_watermark == 1
            assert time.monotonic() - start < 10
        slow.close()


def test_garbage_on_one_connection_leaves_the_others_serving() -> None:
    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        port = cluster.brokers[0].port
        with WireClient(port) as good:
            for junk in (struct.pack(">i", -5), struct.pack(">ih", 2, 999), struct.pack(">ihhi", 8, 0, 99, 1)):
                with socket.create_connection(("127.0.0.1", port), timeout=5) as bad:
                    bad.sendall(junk)
                    assert bad.recv(1) == b""
                assert good.call(3, 12, api.request_module(3).MetadataRequest(topics=None)).topics


def test_stop_closes_connections_and_pending_long_polls() -> None:
    cluster = MockCluster(brokers=1, topics={"t": 1}).start_background()
    c = WireClient(cluster.brokers[0].port)
    c.send(1, 12, fetch_body("t", 0, 0, max_wait_ms=20_000))
    time.sleep(0.1)
    start = time.monotonic()
    cluster.stop_background()
    assert time.monotonic() - start < 5
    assert c.closed_by_peer()
    c.close()


def _batch(size: int) -> bytes:
    from mockbroker import records as rec

    return rec.build_batch([(b"k", b"v" * size)])
