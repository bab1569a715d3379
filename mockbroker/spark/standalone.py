"""A Spark standalone cluster on this machine, started from pyspark's own launch classes: a master and N
workers, each its own JVM (and each executor its own Python workers), so a job meets what it meets on a
real cluster (executors in other processes, with their own Python) without leaving 127.0.0.1.

    with StandaloneCluster(workers=2) as cluster:
        spark = SparkSession.builder.master(cluster.master_url).getOrCreate()
        ship(spark)                             # executors get mockbroker as an archive

Every JVM runs in its own process group (pyspark's ``spark-class`` forks), and ``stop`` ends the groups:
no JVM outlives the cluster.  Logs are kept in the work directory; a start that fails names the log.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from mockbroker.spark.preflight import java_problem

START_TIMEOUT_S = 90.0


class ClusterStartError(RuntimeError):
    """The master or a worker did not come up; the message names its log."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    """The folder pyspark's wheel installs (it holds bin/spark-class and the jars)."""
    import pyspark

    return Path(pyspark.__file__).parent


class StandaloneCluster:
    """A master on ``spark://127.0.0.1:PORT`` and ``workers`` workers of ``cores`` cores and ``memory`` each."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "2g", work_dir: str | Path | None = None,
                 port: int = 0) -> None:
        if workers < 1 or cores < 1:
            raise ValueError(f"StandaloneCluster needs at least one worker of one core (got workers={workers}, "
                             f"cores={cores})")
        self.workers, self.cores, self.memory = workers, cores, memory
        self._own_dir = work_dir is None
        self.work_dir = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="mockbroker-spark-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self._procs: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    def __enter__(self) -> StandaloneCluster:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        tmp = self.work_dir / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_DIRS=str(tmp),
                   SPARK_DAEMON_JAVA_OPTS=f"-Djava.io.tmpdir={tmp}", SPARK_WORKER_DIR=str(self.work_dir / "work"))
        return env

    def _launch(self, name: str, args: list[str]) -> Path:
        log = self.work_dir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self._env(),
                                    start_new_session=True)
        self._procs.append((name, proc, log))
        return log

    def _wait_for(self, name: str, log: Path, ready: str, deadline: float) -> None:
        proc = next(p for n, p, _ in self._procs if n == name)
        while time.monotonic() < deadline:
            if ready in log.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(empty log)"]
        self.stop()
        state = "exited" if proc.poll() is not None else f"not ready after {START_TIMEOUT_S:.0f} s"
        raise ClusterStartError(f"Spark {name} {state}; its log is {log} (last line: {tail[0]})")

    def start(self) -> None:
        """Start the master, then the workers, and return once every worker has registered."""
        problem = java_problem()
        if problem:
            raise ClusterStartError(problem)
        deadline = time.monotonic() + START_TIMEOUT_S
        master_log = self._launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                             "--port", str(self.port), "--webui-port", "0"])
        self._wait_for("master", master_log, "I have been elected leader", deadline)
        for i in range(self.workers):
            work = self.work_dir / f"worker-{i}"
            work.mkdir(parents=True, exist_ok=True)
            self._launch(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                         "--webui-port", "0", "--cores", str(self.cores), "--memory", self.memory,
                                         "--work-dir", str(work), self.master_url])
        for i in range(self.workers):
            self._wait_for(f"worker-{i}", self.work_dir / f"worker-{i}.log", "Successfully registered with master",
                           deadline)

    def stop(self) -> None:
        """End every JVM's process group (TERM, then KILL after 10 s); remove the work folder if it made it."""
        for _, proc, _ in reversed(self._procs):
            _signal_group(proc, signal.SIGTERM)
        end = time.monotonic() + 10
        for _, proc, _ in self._procs:
            try:
                proc.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(proc, signal.SIGKILL)  # the group may hold forked children even after the leader left
            proc.wait()
        self._procs.clear()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def pids(self) -> list[int]:
        """The process-group leaders still running (empty once stopped)."""
        return [p.pid for _, p, _ in self._procs if p.poll() is None]


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
