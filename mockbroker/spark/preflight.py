"""What Spark needs before a mockbroker job can run, each said in one line at the point of failure instead
of a Python traceback inside a Java stack trace: Java 17+ for the driver, a broker that answers and holds
the topics asked for, and executors whose Python can import mockbroker and what it imports (pyarrow, the
compression codecs).

    problem = java_problem()            # None, or one line ("Spark 4 needs Java 17 or newer: ...")
    problem = broker_problem("127.0.0.1:9092", ["orders"])  # None, or one line (unreachable, no such topic)
    problem = executor_problem(spark)   # None, or one line naming the executors' Python and what it lacks
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

MIN_JAVA = 17
SHIP_HINT = ("call mockbroker.spark.ship(spark) to send mockbroker to the executors as an archive, or "
             "set PYSPARK_PYTHON to a Python that has mockbroker installed (docs/spark.md, 'On a cluster')")

# Run on an executor by value (its module is not importable there, so cloudpickle sends the code): tries the
# imports a mockbroker task makes and reports what failed, without needing mockbroker to unpickle it.
_PROBE_SOURCE = '''
def probe(_):
    import importlib, socket, sys
    missing = []
    for name in ("pyarrow", "mockbroker.spark.source"):
        try:
            importlib.import_module(name)
        except Exception as error:
            missing.append(f"{name} ({type(error).__name__}: {error})")
    yield (socket.gethostname(), sys.executable, "%d.%d" % sys.version_info[:2], missing)
'''


def java_problem() -> str | None:
    """None when ``java`` (JAVA_HOME's, else the one on PATH) is version 17 or newer, else one line."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    where = f"JAVA_HOME={home}" if home else "PATH"
    if not java or not os.path.exists(java):
        return (f"Spark 4 needs Java {MIN_JAVA} or newer, and there is no java on {where}: install one "
                "(Debian: apt install openjdk-17-jre-headless) or set JAVA_HOME")
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"Spark 4 needs Java {MIN_JAVA} or newer, and {java} -version failed: {error}"
    found = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if not found:
        return f"Spark 4 needs Java {MIN_JAVA} or newer, and {java} -version did not say its version"
    major = int(found.group(1)) if found.group(1) != "1" else int(found.group(2) or 0)
    if major < MIN_JAVA:
        return (f"Spark 4 needs Java {MIN_JAVA} or newer, and {java} (from {where}) is Java {major}: install a "
                "newer one or point JAVA_HOME at it")
    return None


def broker_problem(bootstrap: str, topics: list[str], timeout: float = 10.0) -> str | None:
    """None when a broker of ``bootstrap`` answers and has every one of ``topics``, else one line in
    argparse's form, naming the option (``argument --bootstrap-server: cannot connect to ...``)."""
    from mockbroker.client import BrokerError, KafkaClient, KafkaClientError
    from mockbroker.codec_errors import CodecError
    from mockbroker.nearest import hint

    try:
        with KafkaClient(bootstrap, client_id="mockbroker-preflight", timeout=timeout) as client:
            known = client.topics()
    except ValueError:
        return f"argument --bootstrap-server: expected host:port[,host:port], not {bootstrap!r}"
    except (BrokerError, KafkaClientError, CodecError, OSError) as error:  # "cannot connect to HOST:PORT: why"
        return f"argument --bootstrap-server: {' '.join(str(error).split()) or type(error).__name__}"
    for topic in topics:
        if topic not in known:
            return f"argument --topic: {bootstrap} has no topic {topic!r}{hint(topic, known)}"
    return None


def _probe() -> Any:
    namespace: dict[str, Any] = {"__name__": "mockbroker_executor_probe"}
    exec(compile(_PROBE_SOURCE, "<mockbroker executor probe>", "exec"), namespace)
    return namespace["probe"]


def executor_problem(spark: Any) -> str | None:
    """None when a task on every executor can import mockbroker's data source, else one line saying which
    Python the executors run and what it lacks (or that it could not start at all)."""
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext here, and the server's executors are not ours to probe
        return None
    slots = max(2, int(sc.defaultParallelism))
    try:
        answers = sc.parallelize(range(slots), slots).mapPartitions(_probe()).collect()
    except Exception as error:
        return _start_failure(sc.pythonExec, str(error))
    broken = [a for a in answers if a[3]]
    if not broken:
        return None
    host, python, version, missing = broken[0]
    return (f"Spark executors cannot run the mockbroker data source: their Python ({python}, {version}, on "
            f"{host}) cannot import {'; '.join(missing)}; {SHIP_HINT}")


def _start_failure(python: str, text: str) -> str:
    """One line out of a failed probe job's Java and Python traces."""
    if "Cannot run program" in text or "No such file or directory" in text:
        return (f"Spark executors could not start their Python '{python}' (PYSPARK_PYTHON, else python3 on "
                f"the executors' PATH): point PYSPARK_PYTHON at a Python with pyspark and pyarrow before the "
                "SparkSession starts")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    last = next((line for line in reversed(lines) if "Error" in line or "Exception" in line), lines[-1] if lines
                else "no message")
    return f"Spark executors failed a one-task probe with Python '{python}': {last[:300]}"
