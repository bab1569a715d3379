"""The produce lane's answers sent straight to the socket (mockbroker/native/lanes/direct_send.h).

Over real sockets: answers go straight to a plaintext socket while the transport holds nothing; when
the client stops reading and the socket fills, the rest goes through the transport, and every answer
still arrives whole and in order.  TLS connections never send around their transport.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.handlers import produce_lane
from mockbroker.protocol import api
from tests.broker.wire import WireClient, produce_body

pytestmark = pytest.mark.skipif(not produce_lane.available(),
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

VERSION = 9


def _counts() -> tuple[int, int, int]:
    lane = produce_lane._lane
    assert lane is not None
    return lane.direct_sends()  # type: ignore[no-any-return]


def _frame(correlation_id: int) -> bytes:
    batch = rec.build_batch([(None, b"v%d" % correlation_id, [], 1_760_000_000_000)])
    return api.to_bytes(api.encode_request(0, VERSION, correlation_id, produce_body(VERSION, "t", 0, batch), "direct"))


def _exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, f"connection closed after {len(out)} of {n} bytes"
        out += chunk
    return bytes(out)


def test_answers_go_straight_to_a_plaintext_socket() -> None:
    with MockCluster(brokers=1, topics={"t": 1}) as cluster, WireClient(cluster.brokers[0].port) as client:
        before = _counts()
        for i in range(5):
            answer = client.call(0, VERSION, produce_body(VERSION, "t", 0, rec.build_batch([(None, b"x", [], 1)])))
            part = answer.responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, i)
        after = _counts()
        assert after[0] - before[0] == 5  # whole, straight to the socket
        conns = cluster.call(lambda: list(cluster.brokers[0].connections))
        assert len(conns) == 1 and conns[0].socket_fd >= 0
        client.close()
        deadline = time.monotonic() + 10
        while not cluster.call(lambda: conns[0].closed) and time.monotonic() < deadline:
            time.sleep(0.01)
        # a closed connection forgets its descriptor: the number may be another socket's next
        assert cluster.call(lambda: conns[0].socket_fd) == -1


def test_a_full_socket_hands_the_rest_to_the_transport_in_order() -> None:
    count = 800
    config = {"socket.send.buffer.bytes": 4096}
    with MockCluster(brokers=1, topics={"t": 1}, config=config) as cluster:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # small, so the broker's sends back up
        sock.settimeout(30)
        sock.connect(("127.0.0.1", cluster.brokers[0].port))
        before = _counts()
        frames = b"".join(_frame(i) for i in range(count))
        # sent from a thread: should the broker stop reading while its answers wait, sendall waits too
        sender = threading.Thread(target=sock.sendall, args=(frames,))
        sender.start()
        time.sleep(0.5)  # the client reads nothing meanwhile: the broker's socket fills
        for i in range(count):
            size = struct.unpack(">i", _exactly(sock, 4))[0]
            correlation_id, answer = api.decode_response(0, VERSION, _exactly(sock, size))
            part = answer.responses[0].partition_responses[0]
            assert (correlation_id, part.error_code, part.base_offset) == (i, 0, i)
        sender.join(10)
        whole, partly, through = (a - b for a, b in zip(_counts(), before, strict=True))
        # answers taken from one read go out in one write: fewer writes than answers
        assert partly + through > 0, (whole, partly, through)
        # once the transport has drained, answers go straight to the socket again
        before = _counts()
        sock.sendall(_frame(count))
        size = struct.unpack(">i", _exactly(sock, 4))[0]
        correlation_id, answer = api.decode_response(0, VERSION, _exactly(sock, size))
        assert (correlation_id, answer.responses[0].partition_responses[0].base_offset) == (count, count)
        assert _counts()[0] - before[0] == 1
        sock.close()
        stored = cluster.call(lambda: cluster.state.topics["t"].partitions[0].next_offset)
        assert stored == count + 1
