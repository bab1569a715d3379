"""Every code block in README.md and docs/**/*.md runs as written, and the docs site builds (issue 39).

How each block is run (the conventions a writer of docs follows):

- ```python blocks are found by pytest-examples (``find_examples``) and run in-process as scripts by its
  ``eval_example`` fixture. A block that names ``localhost:9092`` (a broker the reader started with
  ``mockbroker serve`` or ``make run``) gets a fresh ``MockCluster`` instead: every ``localhost:9092`` is
  rewritten to its bootstrap servers. A block that defines ``test_*`` functions is a test module: it is
  written to a file and run by pytest (the mockbroker plugin loads from its entry point), which must pass.
  A block importing pyspark is marked ``spark`` (it needs Java 17).
- ```shell / ```bash / ```sh / ```console blocks run line by line with bash, in a temporary directory,
  with the repo's .venv/bin first on PATH (``console`` lines start with ``$ ``; others are output).
  ``make`` lines and ``pip install`` lines run in the repo root (they are "from a clone").
  Long-running commands (``mockbroker serve``, ``make run``, ``mockbroker scenario run`` without
  ``--app``/``--exec``; ``NAME=value`` assignments may come first) are started with their fixed ports made 0
  (so tests never collide), waited for their ``bootstrap.servers=`` line, kept running for the block's later
  lines (whose ``localhost:PORT`` is rewritten to the ports actually used) and stopped (SIGINT) when the block
  ends. ``make run`` runs with ``-o .venv/.runtime`` so the test never reinstalls into the shared .venv.
  ``pip install ARGS`` lines are checked with ``pip install --dry-run --no-deps --no-build-isolation
  ARGS`` against the repo's .venv (the project's metadata builds, every package and extra named exists,
  nothing is installed); tests/test_install.py installs the built wheel into a fresh venv for real.
  A ``python3 -m venv .venv && . .venv/bin/activate`` line (the reader's own venv) runs for real in the
  temporary directory; its activation lasts for that line only, later lines use the repo's .venv.
  ``docker`` lines cannot run here (no Docker engine): each is a skipped test saying so, after checking
  the files it names exist; tests/test_dockerfile.py lints the Dockerfile and runs its commands.
  ``make test*`` (the suite's tiers, which run this file), ``make bench`` (the hour-long benchmarks) and
  ``make soak`` (10 minutes) are dry runs (``make -n``): the target exists and its recipe expands. Every
  other line must exit 0.
- A ```yaml block that is a compose file (a top-level ``services:``) runs each service whose image is mockbroker's as
  tests/compose_services.py does: the image's entrypoint as a process with the image's environment and the
  service's (fixed ports moved to free ones, the file's host names 127.0.0.1); each must print its first line
  and pass the image's healthcheck, and stop cleanly. A compose file without one (a "before" file) is a skipped
  test saying so.
- ```text blocks are output shown to readers and are not run; other ```yaml blocks and the rest neither.
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples

from tests.processes import interrupt_group

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_FENCE = re.compile(r"^```(shell|bash|sh|console)[ \t]*\n(.*?)^```", re.S | re.M)
LONG_RUNNING = re.compile(r"^([A-Z][A-Z0-9_]*=\S+ )*(mockbroker serve|python -m mockbroker serve|make run\b"
                          r"|mockbroker scenario run (?!.*(--app|--exec)))")
WAIT_S = 90
# what librdkafka logs when a client outlives its broker: a connection closed or refused (log.connection.close);
# a refusal an example shows on purpose (a SASL error, say) is not one of these
CLIENT_LEFT_OPEN = re.compile(r"\|FAIL\|rdkafka#.*(Connection refused|connection closed by peer|Disconnected)")


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- python blocks --------------------------------------------------------------------------------------

PYTHON = [ex for page in PAGES for ex in find_examples(page)]


def _pid(ex: CodeExample) -> str:
    return f"{_name(ex.path)}:{ex.start_line}"


def _python_params() -> list:
    params = []
    for ex in PYTHON:
        marks = [pytest.mark.clients]
        if "pyspark" in ex.source:
            marks.append(pytest.mark.spark)
        params.append(pytest.param(ex, id=_pid(ex), marks=marks))
    return params


@pytest.mark.parametrize("example", _python_params())
def test_python_block(example: CodeExample, eval_example: EvalExample, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    _run_python_block(example, eval_example, tmp_path, monkeypatch)
    _, err = capfd.readouterr()
    left_open = [line for line in err.splitlines() if CLIENT_LEFT_OPEN.search(line)]
    assert not left_open, (f"{_pid(example)}: a client was still open when its broker went away "
                           f"(close it, or del it, before the cluster stops): {left_open[:3]}")


def _run_python_block(example: CodeExample, eval_example: EvalExample, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    if "pyspark" in example.source and subprocess.run(["java", "-version"], capture_output=True).returncode:
        pytest.skip("needs Java 17 for Spark (java -version failed)")
    monkeypatch.chdir(tmp_path)
    if re.search(r"^def test_", example.source, re.M):
        test_file = tmp_path / "test_snippet.py"
        test_file.write_text(example.source)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        return
    if "localhost:9092" in example.source:
        from mockbroker.cluster import MockCluster

        with MockCluster() as cluster:
            _run(eval_example, replace(example, source=example.source.replace(
                "localhost:9092", cluster.bootstrap_servers)))
        return
    _run(eval_example, example)


def _run(eval_example: EvalExample, example: CodeExample) -> None:
    """Runs the block; a failure is reported as the block's own traceback (pytest-examples' traceback
    rewriting trips over a block whose source was rewritten, ending pytest with an INTERNALERROR).

    pytest-examples runs the block as ``sys.modules["__main__"]`` and leaves it there: the block's globals
    (a Producer whose cluster has stopped, say) would live on in the worker, its client reconnecting and
    logging until the next block. The block's module is emptied and the real ``__main__`` put back."""
    failure = None
    main = sys.modules["__main__"]
    try:
        eval_example.run(example, rewrite_assertions=False)
    except BaseException as e:  # SystemExit too: a block that exits has failed
        if not (isinstance(e, SystemExit) and e.code in (None, 0)):
            tb = e.__traceback__
            while tb is not None and tb.tb_next is not None:
                tb = tb.tb_next
            where = f" (line {tb.tb_lineno} of {tb.tb_frame.f_code.co_filename})" if tb else ""
            failure = f"{_pid(example)} failed{where}: {type(e).__name__}: {e}"
    finally:
        block = sys.modules["__main__"]
        if block is not main:
            block.__dict__.clear()
            sys.modules["__main__"] = main
        gc.collect()  # the block's clients are destroyed now, not at some later collection
    if failure:  # raised outside the except block, so pytest does not walk the block's frames
        raise AssertionError(failure)


# --- shell blocks ---------------------------------------------------------------------------------------

@dataclass
class ShellBlock:
    page: Path
    line: int
    lines: list[str]

    @property
    def id(self) -> str:
        return f"{_name(self.page)}:{self.line}"


def _shell_blocks() -> list[ShellBlock]:
    blocks = []
    for page in PAGES:
        text = page.read_text()
        for m in SHELL_FENCE.finditer(text):
            raw = m.group(2).replace("\\\n", " ").splitlines()
            if m.group(1) == "console":
                raw = [line[2:] for line in raw if line.startswith("$ ")]
            lines = [line.strip() for line in raw if line.strip() and not line.strip().startswith("#")]
            blocks.append(ShellBlock(page, text[:m.start()].count("\n") + 1, lines))
    return blocks


SHELL = _shell_blocks()


def _env() -> dict[str, str]:
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONUNBUFFERED="1", PYSPARK_PYTHON=str(VENV_BIN / "python"))
    env.pop("MOCKBROKER_PORT", None)
    env.pop("MOCKBROKER_CONTROL_PORT", None)
    return env


def _start(line: str, cwd: Path, ports: dict[str, str]) -> subprocess.Popen[str]:
    """Starts a long-running command with free ports; records which port each fixed one became."""
    asked_port = (re.search(r"--port (\d+)", line) or re.search(r"PORT=(\d+)", line))
    asked_control = re.search(r"--control-port (\d+)", line)
    line = re.sub(r"--port \d+", "--port 0", line)
    line = re.sub(r"--control-port \d+", "--control-port 0", line)
    listeners = re.search(r"--listeners (\S+)", line)
    if listeners:
        asked_port = re.search(r":(\d+)", listeners.group(1))
        line = line.replace(listeners.group(1), re.sub(r":\d+", ":0", listeners.group(1)))
    if line.startswith("make run"):
        line = f"make -s -o .venv/.runtime run PORT=0{line[len('make run'):]}"
        cwd = ROOT
    elif not re.search(r"--port|--listeners", line) and "serve" in line:
        line += " --port 0"
    assignments, command = re.match(r"^((?:[A-Z][A-Z0-9_]*=\S+ )*)(.*)$", line).groups()  # type: ignore[union-attr]
    proc = subprocess.Popen(["bash", "-c", f"{assignments}exec {command}"], cwd=cwd, env=_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    seen = []
    assert proc.stdout is not None
    for out in proc.stdout:  # the broker prints bootstrap.servers= and control= before its log lines
        seen.append(out)
        if out.startswith("control="):
            ports[asked_control.group(1) if asked_control else "9644"] = out.split(":")[-1].strip()
        if out.startswith("bootstrap.servers="):
            first = out.split("=", 1)[1].split(",")[0].strip()
            ports[asked_port.group(1) if asked_port else "9092"] = first.rsplit(":", 1)[1]
        if any(o.startswith("bootstrap.servers=") for o in seen) and (
                asked_control is None or any(o.startswith("control=") for o in seen)):
            return proc
        if len(seen) > 200:
            break
    proc.kill()
    raise AssertionError(f"{line!r} printed no bootstrap.servers line:\n{''.join(seen)[-3000:]}")


def _pip_check(line: str) -> None:
    args = line.split(None, 2)[2]
    done = subprocess.run(f"{VENV_BIN}/pip install --dry-run --no-deps --no-build-isolation -q {args}",
                          shell=True, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{line!r}: {done.stderr[-2000:]}"
    assert "does not provide the extra" not in done.stderr, f"{line!r}: {done.stderr[-2000:]}"


def _run_block(block: ShellBlock, tmp_path: Path) -> None:
    started: list[subprocess.Popen[str]] = []
    ports: dict[str, str] = {}
    try:
        for line in block.lines:
            if line.startswith("docker "):
                continue  # test_docker_line
            if line.startswith("pip install "):
                _pip_check(line)
                continue
            if LONG_RUNNING.match(line):
                started.append(_start(line, tmp_path, ports))
                continue
            for asked, used in ports.items():
                line = re.sub(rf"\b(localhost|127\.0\.0\.1):{asked}\b", f"127.0.0.1:{used}", line)
            if re.match(r"make (test|bench|soak)\b", line):
                line = line.replace("make ", "make -n ", 1)  # the suite's tiers, the benchmarks, the soak: a dry run
            cwd = ROOT if line.startswith("make ") else tmp_path
            done = subprocess.run(["bash", "-c", line], cwd=cwd, env=_env(), capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, f"{line!r} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"  # noqa: E501
    finally:
        for proc in started:
            interrupt_group(proc)


def _shell_params() -> Iterator:
    for block in SHELL:
        if all(line.startswith("docker ") for line in block.lines):
            continue
        marks = [pytest.mark.clients] + ([pytest.mark.spark] if "audit" in " ".join(block.lines) else [])
        yield pytest.param(block, id=block.id, marks=marks)


@pytest.mark.parametrize("block", list(_shell_params()))
def test_shell_block(block: ShellBlock, tmp_path: Path) -> None:
    _run_block(block, tmp_path)


DOCKER = [(f"{b.id}:{line}", line) for b in SHELL for line in b.lines if line.startswith("docker ")]


@pytest.mark.parametrize("line", [line for _, line in DOCKER], ids=[i for i, _ in DOCKER])
def test_docker_line(line: str) -> None:
    for named in re.findall(r"-f (\S+)", line):
        assert (ROOT / named).is_file(), f"{line!r} names {named}, which does not exist"
    pytest.skip("no Docker engine here: tests/test_dockerfile.py lints the Dockerfile (hadolint) and runs its "
                "entrypoint, command and healthcheck outside a container")


# --- compose files ---------------------------------------------------------------------------------------

YAML_FENCE = re.compile(r"^```yaml[ \t]*\n(.*?)^```", re.S | re.M)


def _compose_blocks() -> list:
    import yaml

    params = []
    for page in PAGES:
        text = page.read_text()
        for m in YAML_FENCE.finditer(text):
            doc = yaml.safe_load(m.group(1))
            if isinstance(doc, dict) and isinstance(doc.get("services"), dict):
                line = text[:m.start()].count("\n") + 1
                params.append(pytest.param(doc, id=f"{_name(page)}:{line}", marks=[pytest.mark.clients]))
    return params


@pytest.mark.parametrize("compose", _compose_blocks())
def test_compose_block(compose: dict) -> None:
    from tests.compose_services import compose_up

    with compose_up(compose) as (services, _ports):
        for name, served in services.items():
            health = served.healthy()
            assert health.returncode == 0, f"service {name}: {health.stderr}"
    if not services:
        pytest.skip("no mockbroker service in this compose file (a 'before' file): nothing of ours to run")


# --- the runner itself, and the site ----------------------------------------------------------------------

def test_the_runner_finds_the_blocks() -> None:
    # a pattern that found nothing would pass everything above
    assert len(PYTHON) >= 10 and len(SHELL) >= 8 and DOCKER
    assert any(_name(ex.path) == "README.md" for ex in PYTHON)
    assert any(LONG_RUNNING.match(line) for b in SHELL for line in b.lines)


def test_a_failing_shell_line_fails_its_block(tmp_path: Path) -> None:
    block = ShellBlock(ROOT / "README.md", 0, ["mockbroker serve --topic demo:3", "curl -sf localhost:9092/nowhere"])
    with pytest.raises(AssertionError, match="exited"):
        _run_block(block, tmp_path)


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    done = subprocess.run([str(VENV_BIN / "mkdocs"), "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()


def test_readme_links_into_docs_exist() -> None:
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, missing


def test_every_docs_page_is_linked_from_the_index_and_the_readme() -> None:
    """docs/index.md and the README's documentation list name every page of docs/ (issue 50: share groups and
    the Schema Registry were missing from both)."""
    index = (ROOT / "docs" / "index.md").read_text()
    readme = (ROOT / "README.md").read_text()
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "index.md")
    assert [p for p in pages if f"]({p}" not in index] == []
    assert [p for p in pages if f"](docs/{p}" not in readme] == []
