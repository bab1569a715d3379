"""ZooKeeper and Burrow (LinkedIn's consumer lag monitor), both from Debian, run as child processes for the
tests of tests/burrow/: Burrow watches a MockCluster (its topics' offsets, and the groups' commits read from
``__consumer_offsets``) and answers on its HTTP API.

ZooKeeper runs without systemd or zkServer.sh: ``java -cp /usr/share/java/zookeeper.jar
org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg`` (the jar's manifest names its dependencies), on a
free 127.0.0.1 port, its admin server (Jetty, port 8080 by default) off; it is up when the four-letter word
``srvr`` names its mode (``ruok`` answers ``imok`` before it serves sessions).  Burrow is ``/usr/bin/Burrow
-config-dir DIR`` (Debian names the binary with a capital B) reading ``DIR/burrow.toml``; it is up when
``/burrow/admin`` answers.  Every wait is bounded; stopping sends SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# slf4j's simple binding, when Debian has it: ZooKeeper then logs to stderr (our log file) instead of nowhere
SLF4J_SIMPLE = Path("/usr/share/java/slf4j-simple.jar")
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
BURROW_CLUSTER = "mock"  # the cluster's name in Burrow's config and its URLs
BURROW_CLIENT_ID = "burrow-mock"  # Burrow's client.id, to find its requests in the journal
KAFKA_VERSION = "2.1.0"  # the client profile's kafka-version (issue 53)
# debug lines of Burrow's storage that repeat per partition and refresh
_CHATTER = re.compile(r'"level":"debug".*"request":"Storage(SetBrokerOffset|Fetch[A-Za-z]*)"')
SIGNALS_HEEDED_AFTER = 30.0  # seconds Burrow may take to act on SIGTERM (Burrow.stop)


def burrow_binary() -> str | None:
    """Debian's Burrow binary (``/usr/bin/Burrow``), or None."""
    return shutil.which("Burrow") or shutil.which("burrow")


def missing() -> str | None:
    """Why the Burrow tests cannot run here (a reason for pytest.skip), or None."""
    if burrow_binary() is None:
        return "Burrow is not installed (apt-get install burrow; .ci/install-clients.sh)"
    if shutil.which("java") is None or not ZOOKEEPER_JAR.exists():
        return f"ZooKeeper is not installed ({ZOOKEEPER_JAR} and java; apt-get install zookeeper)"
    return None


def free_port() -> int:
    """A port nothing listens on at 127.0.0.1 now (the child binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, chars: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _stop(proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """SIGTERM, then SIGKILL when it has not ended within ``timeout``."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)


def _wait(ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str, log: Path, timeout: float) -> None:
    """Poll ``ready`` until true; RuntimeError with the log's tail when the process ends or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}:\n{_tail(log)}")
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} not ready within {timeout} s:\n{_tail(log)}")


class ZooKeeper:
    """A standalone ZooKeeper in ``workdir`` (its config, data and log there) on a free 127.0.0.1 port."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.log = workdir / "zookeeper.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> ZooKeeper:
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "zoo.cfg"
        config.write_text("\n".join([
            "tickTime=2000", f"dataDir={data}", f"clientPort={self.port}", "clientPortAddress=127.0.0.1",
            "admin.enableServer=false", "4lw.commands.whitelist=ruok,srvr", "maxClientCnxns=0", "",
        ]))
        classpath = os.pathsep.join(str(p) for p in (ZOOKEEPER_JAR, SLF4J_SIMPLE) if p.exists())
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                ["java", "-Xmx128m", "-cp", classpath, ZOOKEEPER_MAIN, str(config)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir)
        try:
            _wait(self._serves, self.proc, "ZooKeeper", self.log, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _serves(self) -> bool:
        """``srvr`` names the server's mode only once it serves sessions (``ruok`` says imok before that, and
        a client connecting then is closed with "ZooKeeperServer not running")."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.settimeout(2)
                s.sendall(b"srvr")
                reply = b""
                while chunk := s.recv(4096):
                    reply += chunk
                return b"Mode: " in reply
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)


def burrow_config(workdir: Path, zookeeper: str, bootstrap: str, http_port: int, *, offset_refresh: int = 1,
                  topic_refresh: int = 2, group_blacklist: str = "") -> str:
    """Burrow's burrow.toml: its own ZooKeeper, one Kafka cluster (``BURROW_CLUSTER``) with a client profile at
    ``KAFKA_VERSION``, a consumer reading ``__consumer_offsets`` from the start, the HTTP server on
    127.0.0.1:``http_port``, debug logging to ``workdir/burrow.log``.  Burrow 1.2.1 sets a default group
    blacklist nowhere, so every group is seen unless ``group_blacklist`` says otherwise."""
    servers = json.dumps(bootstrap.split(","))
    return f"""\
[general]
pidfile = "{workdir / 'burrow.pid'}"
stdout-logfile = "{workdir / 'burrow.out'}"

[logging]
filename = "{workdir / 'burrow.log'}"
level = "debug"

[zookeeper]
servers = ["{zookeeper}"]
timeout = 6
root-path = "/burrow-{http_port}"

[client-profile.mock]
client-id = "{BURROW_CLIENT_ID}"
kafka-version = "{KAFKA_VERSION}"

[cluster.{BURROW_CLUSTER}]
class-name = "kafka"
servers = {servers}
client-profile = "mock"
topic-refresh = {topic_refresh}
offset-refresh = {offset_refresh}

[consumer.{BURROW_CLUSTER}]
class-name = "kafka"
cluster = "{BURROW_CLUSTER}"
servers = {servers}
client-profile = "mock"
offsets-topic = "__consumer_offsets"
start-latest = false
group-blacklist = "{group_blacklist}"
group-whitelist = ""

[httpserver.default]
address = "127.0.0.1:{http_port}"

[storage.default]
class-name = "inmemory"
workers = 4
intervals = 10
expire-group = 604800
min-distance = 1

[evaluator.default]
class-name = "caching"
expire-cache = 1
"""


class Burrow:
    """Burrow watching the Kafka cluster at ``bootstrap``, its config, pid file and logs in ``workdir``."""

    def __init__(self, workdir: Path, zookeeper: str, bootstrap: str, **settings: Any) -> None:
        self.workdir = workdir
        self.http_port = free_port()
        self.config = burrow_config(workdir, zookeeper, bootstrap, self.http_port, **settings)
        self.log = workdir / "burrow.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self, timeout: float = 30) -> Burrow:
        binary = burrow_binary()
        if binary is None:
            raise RuntimeError(missing())
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "burrow.toml").write_text(self.config)
        with (self.workdir / "burrow.stderr").open("wb") as out:
            self.proc = subprocess.Popen([binary, "-config-dir", str(self.workdir)], stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir)
        try:
            _wait(self._answers, self.proc, "Burrow", self.log, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/burrow/admin", timeout=2) as answer:
                return bool(answer.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def get(self, path: str, timeout: float = 5) -> dict[str, Any]:
        """The JSON answer to GET ``path`` (HTTP errors too: Burrow answers 404 with a JSON body)."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as answer:
                body = answer.read()
        except urllib.error.HTTPError as e:
            body = e.read()
        result: dict[str, Any] = json.loads(body)
        return result

    def wait_for(self, path: str, ready: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        """Poll GET ``path`` until ``ready(answer)``; AssertionError with the last answer after ``timeout``."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = self.get(path)
            if ready(last):
                return last
            time.sleep(0.5)
        raise AssertionError(f"GET {path}: not as expected within {timeout} s; last answer: {json.dumps(last)}")

    def logs(self, lines: int = 300) -> str:
        """What Burrow wrote: the last ``lines`` of its log without the per-partition chatter of its storage
        (broker offsets every refresh, fetches for the API), then its stdout/stderr (panics land there)."""
        parts = []
        kept = [line for line in _tail(self.log, 2_000_000).splitlines() if not _CHATTER.search(line)]
        if kept:
            parts.append("--- burrow.log\n" + "\n".join(kept[-lines:]))
        for name in ("burrow.out", "burrow.stderr"):
            text = _tail(self.workdir / name)
            if text:
                parts.append(f"--- {name}\n{text}")
        return "\n".join(parts)

    def __enter__(self) -> Burrow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM (SIGKILL after ``SIGNALS_HEEDED_AFTER``): Burrow reads its exit signal only once its consumer
        has started on every partition of ``__consumer_offsets``, and starting one waits behind the previous
        one's long-polling Fetch (sarama sends both on one connection: 250 ms each, 12.5 s for Kafka's 50)."""
        if self.proc is not None:
            _stop(self.proc, timeout=SIGNALS_HEEDED_AFTER)
