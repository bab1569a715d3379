"""How the registry starts: ``mockbroker serve --schema-registry-port`` prints its URL and serves it, a
port in use or out of range gets one line naming the flag, the pytest fixture gives the registry beside
``mock_cluster``, a cluster reset empties it, and MockCluster refuses a bad ``schema_registry`` value."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
import requests

from mockbroker.cluster import MockCluster

pytestmark = [pytest.mark.clients]


def test_serve_prints_and_serves_the_registry() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--schema-registry-port",
                             "0", "--log-level", "WARNING"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("bootstrap.servers=127.0.0.1:")
        line = proc.stdout.readline().strip()
        assert line.startswith("schema.registry.url=http://127.0.0.1:")
        url = line.split("=", 1)[1]
        assert requests.get(url + "/subjects", timeout=10).json() == []
        assert requests.get(url + "/config", timeout=10).json() == {"compatibilityLevel": "BACKWARD"}
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--port", "0",
                               "--schema-registry-port", str(port)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "--schema-registry-port" in done.stderr and "in use" in done.stderr


def test_the_pytest_fixture_is_beside_mock_cluster(mock_cluster: MockCluster, schema_registry_url: str) -> None:
    assert mock_cluster.schema_registry_url == schema_registry_url
    schema = '{"type": "string"}'
    answer = requests.post(f"{schema_registry_url}/subjects/s/versions", json={"schema": schema}, timeout=10)
    assert answer.status_code == 200 and answer.json() == {"id": 1}
    assert "_schemas" in mock_cluster.state.topics


def test_a_reset_cluster_has_an_empty_registry() -> None:
    with MockCluster(schema_registry=True) as cluster:
        url = cluster.schema_registry_url
        requests.post(f"{url}/subjects/s/versions", json={"schema": '"string"'}, timeout=10)
        cluster.reset()
        assert cluster.schema_registry_url == url
        assert requests.get(f"{url}/subjects", timeout=10).json() == []
        assert "_schemas" in cluster.state.topics


@pytest.mark.parametrize("value", [-1, 70000, "yes"])
def test_a_bad_schema_registry_value_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="schema_registry must be True, False or a port 0-65535"):
        MockCluster(schema_registry=value)  # type: ignore[arg-type]
