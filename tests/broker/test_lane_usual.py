"""Where the lanes' "usual" is decided, held against what the lanes do over real sockets.

Each lane states the broker and connection state that keeps requests from it in one Python function
(produce_lane.usual_for, k01_fetch.usual_for), the produce lane's topic settings in another
(produce_lane.usual_for_topic), and the C borrow() path reads the produce lane's declaration itself
(native/lanes/lane_usual.h, whose verdict ``_producelane.usual`` gives).  For each condition: with it on,
both verdicts say "not usual", a real Produce and Fetch are answered by the handlers (or, for a network
partition, not at all) and no lane took them -- whether the Produce came to borrow() (a connection with
nothing queued) or to dispatch (borrowing off) -- and ApiVersions is not answered by borrow() either;
with it off again, the lanes take them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.handlers import k01_fetch, lane_state, produce_lane
from mockbroker.handlers.registry import LANES
from mockbroker.protocol import api
from mockbroker.state import replica_selector
from tests.broker.sasl_wire import SaslWire
from tests.broker.wire import WireClient, fetch_body, produce_body

needs_c = pytest.mark.skipif(not produce_lane.available() or 1 not in LANES,
                             reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

AV = api.request_module(18)
NO_ANSWER, CLOSED = "no answer", "closed"
QUIET_S = 0.4  # how long a request goes unanswered before a network partition is believed


class Lanes:
    """What the lanes took: Produce requests through dispatch (produce_lane.serve), Produce and
    ApiVersions requests borrow() answered, Fetch requests (k01_fetch.serve)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, borrowing: bool) -> None:
        self.c, self.borrowing = produce_lane._lane, borrowing
        self.produce_dispatched = self.fetched = 0
        self._borrowed, self._versions = self.c.staging_taken(), self.c.api_versions_taken()
        real_produce, real_fetch = self.c.produce, LANES[1]

        def produce(*args: Any) -> Any:
            result = real_produce(*args)
            self.produce_dispatched += type(result) is tuple
            return result

        def fetch(*args: Any) -> Any:
            answer = real_fetch(*args)
            self.fetched += answer is not None
            return answer

        monkeypatch.setattr(produce_lane, "_lane", _Wrapped(self.c, produce))
        monkeypatch.setitem(LANES, 1, fetch)

    def taken(self) -> tuple[int, int, int]:
        """(Produce requests the produce lane took either way, Fetch requests, ApiVersions borrow() took)"""
        return (self.produce_dispatched + self.c.staging_taken() - self._borrowed, self.fetched,
                self.c.api_versions_taken() - self._versions)


class _Wrapped:
    """The C lane with its ``produce`` counted (serve calls it; borrow() does not)."""

    def __init__(self, lane: Any, produce: Callable[..., Any]) -> None:
        self._lane, self.produce = lane, produce

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lane, name)


@pytest.fixture(params=["borrow", "dispatch"])
def lanes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lanes]:
    """The lanes counted; with ``dispatch`` a Produce reaches the lane only through dispatch."""
    borrowing = request.param == "borrow"
    produce_lane._lane.enable_staging(borrowing)
    try:
        yield Lanes(monkeypatch, borrowing)
    finally:
        produce_lane._lane.enable_staging(True)


def _server_connection(cluster: MockCluster, client: WireClient) -> Any:
    peer = f"127.0.0.1:{client.sock.getsockname()[1]}"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        found = [c for c in cluster.call(lambda: list(cluster.server(0).connections)) if c.peer == peer]
        if found:
            return found[0]
        time.sleep(0.01)
    raise AssertionError(f"the broker has no connection from {peer}")


def verdicts(cluster: MockCluster, client: WireClient) -> tuple[bool, bool, bool]:
    """(produce_lane.usual_for, C's verdict for borrow(), k01_fetch.usual_for) for ``client``'s connection."""
    conn = _server_connection(cluster, client)
    broker = cluster.server(0)
    return cluster.call(lambda: (produce_lane.usual_for(broker, conn), produce_lane._lane.usual(broker, conn),
                                 k01_fetch.usual_for(broker, conn)))


def _answer(client: WireClient, api_key: int, version: int, body: Any) -> Any:
    client.sock.settimeout(QUIET_S)
    try:
        return client.call(api_key, version, body)
    except TimeoutError:
        return NO_ANSWER
    except ConnectionError:
        return CLOSED


def api_versions(client: WireClient) -> Any:
    request = AV.ApiVersionsRequest(client_software_name="lane-test", client_software_version="1")
    answer = _answer(client, 18, 3, request)
    return answer if answer in (NO_ANSWER, CLOSED) else answer.error_code


def produce(client: WireClient, topic: str = "t") -> Any:
    """A one-record Produce v9 on ``client``: the partition's error code, or NO_ANSWER / CLOSED."""
    batch = rec.build_batch([(b"k", b"v", [], int(time.time() * 1000))])
    answer = _answer(client, 0, 9, produce_body(9, topic, 0, batch))
    return answer if answer in (NO_ANSWER, CLOSED) else answer.responses[0].partition_responses[0].error_code


def fetch(client: WireClient) -> Any:
    """A Fetch v12 of partition t-0 from offset 0: (error code, whether records came), or NO_ANSWER / CLOSED."""
    answer = _answer(client, 1, 12, fetch_body("t", 0, 0))
    if answer in (NO_ANSWER, CLOSED):
        return answer
    partition = answer.responses[0].partitions[0]
    return partition.error_code, bool(partition.records)


def attempt(cluster: MockCluster, port: int) -> tuple[tuple[bool, bool, bool], Any, Any, Any]:
    """The verdicts for a fresh connection and what an ApiVersions got on it, then what a Fetch and a
    Produce got, each on a fresh connection (a Produce there comes to borrow() unless borrowing is off)."""
    with WireClient(port) as client:
        seen = verdicts(cluster, client)
        versions = api_versions(client)
    with WireClient(port) as client:
        fetched = fetch(client)
    with WireClient(port) as client:
        produced = produce(client)
    return seen, versions, fetched, produced


def _port(cluster: MockCluster, listener: str = "PLAINTEXT") -> int:
    return int(cluster.server(0).ports[listener])


@dataclass
class Condition:
    name: str
    on: Callable[[MockCluster], Callable[[], Any] | None]  # turns it on; gives what turns it off (None: cannot)
    produce_lane: bool  # does it keep Produce from its lane (else only Fetch)
    fetch_lane: bool
    answered: Any = ((0, True), 0)  # what the Fetch and the Produce get from the handlers while it is on


def _fault_rule(c: MockCluster) -> Callable[[], Any]:
    rule = c.faults.add({"api": "Metadata", "error": "UNKNOWN_SERVER_ERROR", "times": 1})  # never fires here
    return lambda: c.faults.remove(rule.id)


def _quota(c: MockCluster) -> Callable[[], Any]:
    c.set_quota({"client-id": None}, producer_byte_rate=1e12, consumer_byte_rate=1e12)  # never throttles
    return lambda: c.set_quota({"client-id": None}, producer_byte_rate=None, consumer_byte_rate=None)


def _acls(c: MockCluster) -> Callable[[], Any]:
    c.add_acl("TOPIC", "t", "User:*", "ALL")
    c.call(c.state.config.set, "authorizer.class.name", "kafka.security.authorizer.AclAuthorizer")
    return lambda: c.call(c.state.config.set, "authorizer.class.name", "")


def _drop_hook(c: MockCluster) -> Callable[[], Any]:
    c.call(setattr, c.state, "drop_produce_responses", 1)
    return lambda: c.call(setattr, c.state, "drop_produce_responses", 0)  # (as the Produce it drops does)


def _partition(c: MockCluster) -> Callable[[], Any]:
    # what partition_broker sets (which also fences the broker: not with a single one)
    c.call(setattr, c.server(0), "partitioned", True)
    return lambda: c.call(setattr, c.server(0), "partitioned", False)


def _selector(c: MockCluster) -> Callable[[], Any]:
    c.call(c.state.config.set, replica_selector.SELECTOR_CONFIG, replica_selector.RACK_AWARE)
    return lambda: c.call(c.state.config.reset, replica_selector.SELECTOR_CONFIG)


CONDITIONS = [
    Condition("fault rule", _fault_rule, True, True),
    Condition("client quota", _quota, True, True),
    Condition("ACLs", _acls, True, True),
    Condition("drop_produce_responses", _drop_hook, True, False, ((0, True), CLOSED)),
    Condition("network partition", _partition, True, True, (NO_ANSWER, NO_ANSWER)),
    Condition("rack-aware replica selector", _selector, False, True),
]


@pytest.mark.parametrize("condition", CONDITIONS, ids=lambda c: c.name)
def test_usual_for_follows_each_condition(condition: Condition) -> None:
    """Both lanes' usual_for, with or without the C extension."""
    with MockCluster(brokers=1, topics={"t": 1}) as cluster, WireClient(_port(cluster)) as client:
        conn, broker = _server_connection(cluster, client), cluster.server(0)

        def both() -> tuple[bool, bool]:
            return cluster.call(lambda: (produce_lane.usual_for(broker, conn), k01_fetch.usual_for(broker, conn)))

        assert both() == (True, True)
        off = condition.on(cluster)
        assert both() == (not condition.produce_lane, not condition.fetch_lane)
        off()
        assert both() == (True, True)


def test_a_declaration_names_attribute_paths() -> None:
    with pytest.raises(ValueError, match="not an attribute path"):
        lane_state.usual_function(("sasl",), ("cluster.faults.rules or True",), ())
    usual_for = lane_state.usual_function((), ("partitioned",), ("authorizer.class.name",))
    assert usual_for.__code__.co_names == ("partitioned", "cluster", "config", "values", "get")


@needs_c
@pytest.mark.parametrize("condition", CONDITIONS, ids=lambda c: c.name)
def test_broker_state_keeps_requests_from_the_lanes_while_it_holds(condition: Condition, lanes: Lanes) -> None:
    borrowed_versions = 1 if lanes.borrowing else 0  # ApiVersions through borrow(), where it may take a Produce
    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        port = _port(cluster)
        assert attempt(cluster, port) == ((True, True, True), 0, (0, False), 0)
        assert lanes.taken() == (1, 1, borrowed_versions), "the usual requests took the lanes"

        before = lanes.taken()
        off = condition.on(cluster)
        seen, versions, fetched, produced = attempt(cluster, port)
        assert seen == (not condition.produce_lane, not condition.produce_lane, not condition.fetch_lane)
        assert (fetched, produced) == condition.answered, "the handlers answered as they do"
        assert versions == (NO_ANSWER if fetched == NO_ANSWER else 0)
        took = tuple(now - then for now, then in zip(lanes.taken(), before, strict=True))
        assert took == (0 if condition.produce_lane else 1, 0 if condition.fetch_lane else 1,
                        0 if condition.produce_lane else borrowed_versions), "what the lanes took"
        if off is None:
            return
        off()
        before = lanes.taken()
        assert attempt(cluster, port) == ((True, True, True), 0, (0, True), 0)
        took = tuple(now - then for now, then in zip(lanes.taken(), before, strict=True))
        assert took == (1, 1, borrowed_versions), "with the condition off again, the lanes take the requests"


@needs_c
def test_a_sasl_listener_keeps_requests_from_the_lanes(lanes: Lanes) -> None:
    with MockCluster(brokers=1, topics={"t": 1}, listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                     sasl_users={"alice": "alice-secret"}) as cluster:
        assert attempt(cluster, _port(cluster)) == ((True, True, True), 0, (0, False), 0)
        assert lanes.taken()[:2] == (1, 1), "the lanes took the requests of the plain listener"
        before = lanes.taken()
        with SaslWire(_port(cluster, "SASL_PLAINTEXT")) as client:
            assert api_versions(client) == 0
            assert client.handshake("PLAIN").error_code == 0
            assert [a.error_code for a in client.authenticate("PLAIN", "alice", "alice-secret")] == [0]
            assert verdicts(cluster, client) == (False, False, False)
            assert fetch(client) == (0, True) and produce(client) == 0
        assert lanes.taken() == before, "no lane took a request of the SASL connection"


TOPICS = {
    "gzipped": {"compression.type": "gzip"},
    "appendtime": {"message.timestamp.type": "LogAppendTime"},
    "retained": {"retention.bytes": 1 << 30},
    "__consumer_offsets": {},  # internal: the handler refuses it
}


@needs_c
@pytest.mark.parametrize("name", list(TOPICS))
def test_topic_settings_keep_produce_from_the_lane(name: str, lanes: Lanes) -> None:
    from mockbroker.handlers.k00_produce import settings

    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        topic = cluster.create_topic(name, 1, config=TOPICS[name])
        plain = cluster.state.topics["t"]
        assert cluster.call(lambda: [produce_lane.usual_for_topic(*settings(cluster.state, t), t)
                                     for t in (plain, topic)]) == [True, False]
        with WireClient(_port(cluster)) as client:
            assert produce(client, "t") == 0
            assert lanes.taken()[0] == 1, "a plain topic: the lane"
            refused = ErrorCode.INVALID_TOPIC_EXCEPTION if topic.is_internal else 0
            assert produce(client, name) == refused
            assert lanes.taken()[0] == 1, f"{name}: the handler"
            if topic.is_internal:
                return
            for key in TOPICS[name]:  # back to the broker's default: the lane's settings follow the change
                cluster.call(topic.config.reset, key)
            assert produce(client, name) == 0
            assert lanes.taken()[0] == 2, f"{name} with the default settings: the lane"


@needs_c
def test_c_keeps_no_condition_of_its_own() -> None:
    """The C verdict follows the declaration it was handed: a condition added there (here: a listener's
    own attribute) keeps borrow() away at once, and dropping it lets it back."""
    declared = produce_lane.NOT_USUAL_ON_CONNECTION

    def declare(on_connection: tuple[str, ...]) -> None:
        produce_lane._lane.setup_usual(lane_state.split(on_connection), lane_state.split(produce_lane.NOT_USUAL_WHILE),
                                       lane_state.split((lane_state.CONFIG_VALUES,))[0],
                                       produce_lane.NOT_USUAL_WITH_CONFIG)

    with MockCluster(brokers=1, topics={"t": 1}) as cluster, WireClient(_port(cluster)) as client:
        conn = _server_connection(cluster, client)
        broker = cluster.server(0)
        try:
            declare((*declared, "peer"))  # every connection has a peer: nothing is usual
            assert cluster.call(produce_lane._lane.usual, broker, conn) is False
        finally:
            declare(declared)
        assert cluster.call(produce_lane._lane.usual, broker, conn) is True

