"""Install paths (issue 39): the wheel and the sdist built from this tree, each installed into a fresh venv
with the runtime dependencies alone, run every command the runtime offers from a directory that is not the
repository: ``--version``, a shipped scenario by name, ``serve`` with an SSL listener that requires client
certificates (confluent-kafka from the test venv produces and consumes through it presenting one), and
``audit`` (a Spark job the runtime lacks) names the extra to add in one line.  The sdist is installed with
no C compiler (CC=false): it builds pure Python and serves clients.

pip fetches the runtime dependencies from the configured index; where it cannot reach one the tests skip
and say so.  One venv per kind (module-scoped fixtures): building and installing costs ~20 s."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import interrupt_group

pytestmark = [pytest.mark.slow, pytest.mark.clients]

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in")
SCENARIOS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml"))  # the shipped ones, top-level folder
# pip's words when no index answers (offline machine, blocked network), as opposed to a broken package
UNREACHABLE = re.compile(r"Could not find a version|No matching distribution|NewConnectionError|"
                         r"Network is unreachable|Temporary failure in name resolution|ProxyError|ConnectTimeout")


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built from a copy of this tree (the build writes egg-info and build/ beside
    its sources: not in the working tree others use)."""
    pytest.importorskip("build", reason="python -m build is in the [test] extra: pip install -e '.[test]'")
    src = tmp_path_factory.mktemp("src")
    for name in BUILD_INPUTS:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    for folder in ("mockbroker", "scenarios"):  # scenarios/: the shipped scenarios, packaged inside mockbroker
        shutil.copytree(ROOT / folder, src / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    built = run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src, cwd=src)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def fresh_venv(where: Path, target: Path, env: dict[str, str] | None = None, *pip_options: str) -> Path:
    """A new venv at ``where`` with ``target`` (a wheel or an sdist) pip-installed; its bin directory."""
    made = run(sys.executable, "-m", "venv", where, cwd=where.parent)
    assert made.returncode == 0, made.stderr
    bindir = where / "bin"
    done = run(bindir / "python", "-m", "pip", "install", "-q", *pip_options, target, cwd=where.parent, env=env)
    if done.returncode != 0 and UNREACHABLE.search(done.stdout + done.stderr):
        pytest.skip("pip cannot fetch mockbroker's runtime dependencies (no index reachable): "
                    + (done.stderr.strip().splitlines() or ["?"])[-1])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return bindir


@pytest.fixture(scope="module")
def wheel_bin(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    (wheel,) = dist.glob("mockbroker-*.whl")
    return fresh_venv(tmp_path_factory.mktemp("wheel") / "venv", wheel)


@pytest.fixture(scope="module")
def sdist_bin(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    (sdist,) = dist.glob("mockbroker-*.tar.gz")
    no_compiler = {**os.environ, "CC": "false", "CXX": "false"}
    # --no-cache-dir: pip must build this sdist here (with no compiler), not reuse a wheel it built before
    return fresh_venv(tmp_path_factory.mktemp("sdist") / "venv", sdist, no_compiler, "--no-cache-dir")


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working directory that is not the repository (no scenarios/, no mockbroker/ to import by accident)."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    return cwd


def site_package(bindir: Path) -> Path:
    found = run(bindir / "python", "-c", "import mockbroker, os; print(os.path.dirname(mockbroker.__file__))",
                cwd=bindir)
    assert found.returncode == 0, found.stderr
    path = Path(found.stdout.strip())
    assert bindir.parent in path.parents  # the installed copy, not this tree
    return path


class Serving:
    """``mockbroker serve`` from an installed venv, until stopped; its bootstrap line read."""

    def __init__(self, bindir: Path, cwd: Path, *args: str) -> None:
        self.proc = subprocess.Popen([str(bindir / "mockbroker"), "serve", *args], cwd=cwd, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("bootstrap.servers="):
            self.proc.kill()
            pytest.fail(f"serve did not start: {line!r} {self.proc.communicate(timeout=10)[1][-2000:]}")
        self.bootstrap = line.split("=", 1)[1]

    def stop(self) -> str:
        """SIGINT, then the broker's stderr (once; later calls give "")."""
        if self.proc.stderr is None or self.proc.stderr.closed:
            return ""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


@pytest.fixture
def serving() -> Iterator[list[Serving]]:
    started: list[Serving] = []
    yield started
    for s in started:
        s.stop()


def round_trip(config: dict[str, str], count: int = 20) -> list[bytes]:
    """Produce ``count`` records to a fresh topic with confluent-kafka and read them back."""
    from confluent_kafka import Consumer, Producer

    topic = f"install-{uuid.uuid4().hex[:8]}"
    producer = Producer(config)
    for i in range(count):
        producer.produce(topic, f"r{i}".encode())
    assert producer.flush(20) == 0
    consumer = Consumer({**config, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(100):
            if len(got) >= count:
                break
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append(msg.value())
    finally:
        consumer.close()
    return got


# -- the wheel, runtime dependencies alone -----------------------------------------------------------------


def test_wheel_installs_the_runtime_alone(wheel_bin: Path, elsewhere: Path) -> None:
    probe = ("import importlib.util as u; print(' '.join(n for n in ('pyspark', 'pyarrow', 'confluent_kafka', "
             "'kafka', 'aiokafka', 'pytest', 'trustme', 'cryptography', 'aiohttp', 'yaml') if u.find_spec(n)))")
    found = run(wheel_bin / "python", "-c", probe, cwd=elsewhere)
    assert found.stdout.split() == ["cryptography", "aiohttp", "yaml"]  # no extra came along; TLS's need did


def test_the_wheels_console_and_report_find_their_static_files(wheel_bin: Path, elsewhere: Path) -> None:
    """The console's stylesheet and script are package data (a runtime-only install: no registry extra)."""
    probe = """
import urllib.request
from mockbroker.cluster import MockCluster
with MockCluster(control_port=0, topics={"t": 1}) as cluster:
    base = cluster.console_url
    page = urllib.request.urlopen(base).read().decode()
    css = urllib.request.urlopen(base + "static/console.css").read().decode()
    js = urllib.request.urlopen(base + "static/console.js").read().decode()
    report = cluster.write_report("report.html").read_text()
print("<h1>Cluster</h1>" in page, ":root" in css, "X-Console-Part" in js, ":root" in report)
"""
    done = run(wheel_bin / "python", "-c", probe, cwd=elsewhere)
    assert done.stdout.split() == ["True"] * 4, done.stderr[-2000:]


def test_the_wheels_ways_in_work_without_any_client_library(wheel_bin: Path, elsewhere: Path) -> None:
    """mockbroker.testcontainers, mock_kafka and serve --kafka-env in a runtime-only install (no Kafka client
    library, no registry extra): a container starts, mock_kafka has nothing to redirect and says so."""
    probe = """
import logging
from mockbroker import mock_kafka
from mockbroker.testcontainers import KafkaContainer
with KafkaContainer().with_env("KAFKA_NUM_PARTITIONS", "2") as kafka:
    print(kafka.get_bootstrap_server().startswith("127.0.0.1:"), kafka.cluster.state.config["num.partitions"])
logging.basicConfig(level="INFO", format="%(message)s")
with mock_kafka() as cluster:
    print(mock_kafka().redirected, bool(cluster.bootstrap_servers))
"""
    done = run(wheel_bin / "python", "-c", probe, cwd=elsewhere)
    assert done.stdout.split("\n")[:2] == ["True 2", "[] True"], done.stdout + done.stderr[-2000:]
    assert "no Kafka client library installed to redirect" in done.stderr
    typo = run(wheel_bin / "mockbroker", "serve", "--kafka-env", cwd=elsewhere,
               env={**os.environ, "KAFKA_NUM_PARTITONS": "3"})
    assert typo.returncode == 2 and "did you mean KAFKA_NUM_PARTITIONS (num.partitions)?" in typo.stderr


def test_version_from_another_directory(wheel_bin: Path, elsewhere: Path) -> None:
    done = run(wheel_bin / "mockbroker", "--version", cwd=elsewhere)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"mockbroker {VERSION}\n", "")


def test_the_wheel_ships_the_top_level_scenarios_folder(dist: Path, wheel_bin: Path, elsewhere: Path) -> None:
    """The repository's scenarios/ (beside mockbroker/) lands inside the package, and an installed
    ``scenario list`` shows exactly that folder's scenarios."""
    import zipfile

    (wheel,) = dist.glob("mockbroker-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packaged = sorted(n.removeprefix("mockbroker/scenarios/library/") for n in names
                      if n.startswith("mockbroker/scenarios/library/"))
    top = sorted(str(p.relative_to(ROOT / "scenarios")) for p in (ROOT / "scenarios").rglob("*")
                 if p.is_file() and "__pycache__" not in p.parts)
    assert packaged == top and not [n for n in names if n.startswith("scenarios/")]
    listed = run(wheel_bin / "mockbroker", "scenario", "list", cwd=elsewhere)
    assert listed.returncode == 0, listed.stderr
    entries, _, footer = listed.stdout.rstrip("\n").rpartition("\n\n")
    assert [line.split()[0] for line in entries.splitlines() if not line.startswith(" ")] == SCENARIOS
    library = site_package(wheel_bin) / "scenarios" / "library"
    assert (library / "throttling.yaml").is_file() and f" scenarios in {library};" in footer


def test_a_shipped_scenario_runs_by_name(wheel_bin: Path, elsewhere: Path) -> None:
    # the app is the shipped one, run by the test venv's Python (the runtime install has no Kafka client)
    app = site_package(wheel_bin) / "scenarios" / "library" / "apps" / "produce.py"
    command = shlex.join([sys.executable, str(app), "--topic", "metrics", "--count", "4000", "--rate", "1000",
                          "--verify"])
    done = run(wheel_bin / "mockbroker", "scenario", "run", "throttling", "--quiet", "--exec", command,
               cwd=elsewhere, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "throttling" in done.stdout and "Traceback" not in done.stderr


def test_tls_with_client_certificates(wheel_bin: Path, elsewhere: Path, tmp_path: Path,
                                      serving: list[Serving]) -> None:
    """The broker reads the subject of each client certificate (the connection's principal) with
    cryptography: a runtime dependency, so a client presenting a certificate is served."""
    trustme = pytest.importorskip("trustme", reason="trustme makes the certificates ([test] extra)")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("client.example", common_name="client", organization_name="acme")
    files = {name: str(tmp_path / name) for name in ("ca.pem", "server.pem", "server.key", "client.pem",
                                                     "client.key")}
    ca.cert_pem.write_to_path(files["ca.pem"])
    server.private_key_and_cert_chain_pem.write_to_path(files["server.pem"])
    server.private_key_pem.write_to_path(files["server.key"])
    client.cert_chain_pems[0].write_to_path(files["client.pem"])
    client.private_key_pem.write_to_path(files["client.key"])
    broker = Serving(wheel_bin, elsewhere, "--port", "0", "--listeners", "SSL://127.0.0.1:0",
                     "--ssl-certfile", files["server.pem"], "--ssl-keyfile", files["server.key"],
                     "--ssl-cafile", files["ca.pem"], "--ssl-client-auth", "required")
    serving.append(broker)
    config = {"bootstrap.servers": broker.bootstrap, "security.protocol": "SSL",
              "ssl.ca.location": files["ca.pem"], "ssl.certificate.location": files["client.pem"],
              "ssl.key.location": files["client.key"]}
    assert sorted(round_trip(config)) == sorted(f"r{i}".encode() for i in range(20))
    err = broker.stop()
    assert "Traceback" not in err and "ModuleNotFoundError" not in err, err[-3000:]


def test_audit_names_the_extra_it_needs(wheel_bin: Path, elsewhere: Path) -> None:
    done = run(wheel_bin / "mockbroker", "audit", "--bootstrap-server", "127.0.0.1:9", "--topic", "t",
               cwd=elsewhere)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'mockbroker[spark]'" in lines[0], done.stderr


def test_a_shipped_app_without_its_client_says_what_to_add(wheel_bin: Path, elsewhere: Path) -> None:
    """The shipped scenarios' apps are confluent-kafka programs, which the runtime does not install:
    ``--app`` there names the package to add in one line (exit 2) before any broker starts."""
    done = run(wheel_bin / "mockbroker", "scenario", "run", "throttling", "--app", cwd=elsewhere)
    assert done.returncode == 2 and "bootstrap.servers=" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install confluent-kafka" in lines[0], done.stderr


# -- the sdist, with no C compiler -------------------------------------------------------------------------


def test_sdist_builds_pure_python_without_a_compiler(sdist_bin: Path, elsewhere: Path) -> None:
    package = site_package(sdist_bin)
    assert (package / "records" / "check.py").exists()
    assert not list(package.rglob("*.so"))  # CC=false: every optional extension was left out
    speedups = run(sdist_bin / "python", "-c", "from mockbroker.records.check import SPEEDUPS; print(SPEEDUPS)",
                   cwd=elsewhere)
    assert speedups.stdout.strip() == "False", speedups.stderr
    done = run(sdist_bin / "mockbroker", "--version", cwd=elsewhere)
    assert (done.returncode, done.stdout) == (0, f"mockbroker {VERSION}\n"), done.stderr


def test_sdist_install_serves_clients(sdist_bin: Path, elsewhere: Path, serving: list[Serving]) -> None:
    broker = Serving(sdist_bin, elsewhere, "--port", "0")
    serving.append(broker)
    config = {"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"}
    assert sorted(round_trip(config)) == sorted(f"r{i}".encode() for i in range(20))
    err = broker.stop()
    assert "Traceback" not in err, err[-3000:]


# -- make run from a clone: the README's first command -----------------------------------------------------

def test_make_run_from_a_clone_installs_quietly_with_a_plain_pth(tmp_path: Path) -> None:
    """``make run`` in a fresh copy of the tracked tree creates .venv, installs the runtime editable and starts
    the broker: no setuptools deprecation box on the way (issue 50: the 'compat' editable mode is going away),
    the editable install is a .pth naming the clone (no import hook at every start), and ``mockbroker`` is in
    .venv/bin for the README's "in another terminal" step."""
    clone = tmp_path / "clone"
    tracked = run("git", "ls-files", "-z", cwd=ROOT)
    assert tracked.returncode == 0, tracked.stderr
    for name in filter(None, tracked.stdout.split("\0")):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    proc = subprocess.Popen(["make", "-s", "run", "PORT=0"], cwd=clone, text=True, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("bootstrap.servers="):
                break
    finally:
        interrupt_group(proc)
    out = "".join(seen)
    if not seen or not seen[-1].startswith("bootstrap.servers="):
        if UNREACHABLE.search(out):
            pytest.skip("pip cannot fetch mockbroker's runtime dependencies (no index reachable)")
        pytest.fail(f"make run printed no bootstrap.servers line:\n{out[-3000:]}")
    assert not re.search(r"transitional|editable_mode|Deprecat", out, re.I), out[-3000:]
    (pth,) = (clone / ".venv").glob("lib/python*/site-packages/__editable__.mockbroker-*.pth")
    assert pth.read_text().strip() == str(clone), pth.read_text()
    assert (clone / ".venv" / "bin" / "mockbroker").is_file()
