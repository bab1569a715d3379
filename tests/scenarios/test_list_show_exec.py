"""``scenario list`` gives each shipped scenario's first sentence whole (wrapped, never cut), ``scenario show
NAME`` prints the file, and ``--exec`` is a shell command line: ``$KAFKA_BOOTSTRAP_SERVERS`` expands, pipes
and redirections work, and stopping the application (timeout, Ctrl-C) reaches everything it started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from mockbroker.scenarios import shipped

EMPTY = "name: empty\nsteps: []\n"


def cli(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # the width when not a terminal: 100
    return subprocess.run([sys.executable, "-m", "mockbroker", "scenario", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env)


def test_list_gives_each_first_sentence_whole(tmp_path: Path) -> None:
    done = cli("list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    body, _, footer = done.stdout.rstrip("\n").rpartition("\n\n")
    entries: dict[str, str] = {}
    name = ""
    for line in body.splitlines():
        assert len(line) <= 100, line
        if line.startswith(" "):  # a continuation, under the description column
            entries[name] += " " + line.strip()
        else:
            name, _, text = line.partition("  ")
            entries[name] = text.strip()
    assert list(entries) == shipped.names()
    for shipped_name, text in entries.items():
        assert text == shipped.summary(shipped.path_of(shipped_name)) and "…" not in text, shipped_name
    assert "Until three Produce answers have carried it, every Produce answer carries a 300 ms throttle " \
           "time and the broker mutes the connection that long, as Kafka does under a quota (KIP-219)" \
        == entries["throttling"]
    assert footer == (f"{len(entries)} scenarios in {shipped.LIBRARY}; mockbroker scenario show NAME prints one "
                      "in full")


def test_show_prints_the_scenario_file(tmp_path: Path) -> None:
    done = cli("show", "throttling", cwd=tmp_path)
    path = shipped.LIBRARY / "throttling.yaml"
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"# {path}\n" + path.read_text()
    assert "delivers everything." in done.stdout  # the description's last words, which list leaves out
    mine = tmp_path / "mine.yaml"
    mine.write_text(EMPTY)
    assert cli("show", "mine.yaml", cwd=tmp_path).stdout == f"# mine.yaml\n{EMPTY}"


def test_show_an_unknown_name_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = cli("show", "throtling", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == ["throtling: no shipped scenario of that name; nearest shipped: throttling "
                                        "(mockbroker scenario list shows them all)"]


def test_exec_is_a_shell_command_line(tmp_path: Path) -> None:
    """The issue's example: the variable expands (the shell's), and a pipe and a redirection work."""
    (tmp_path / "s.yaml").write_text(EMPTY)
    done = cli("run", "s.yaml", "--quiet", "--exec",
               'echo "kcat -b $KAFKA_BOOTSTRAP_SERVERS -L" | tr a-z A-Z > seen.txt', cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    bootstrap = re.search(r"bootstrap\.servers=(\S+)", done.stdout)
    assert bootstrap is not None
    assert (tmp_path / "seen.txt").read_text() == f"KCAT -B {bootstrap.group(1)} -L\n"


def test_a_stopped_exec_stops_what_the_shell_started(tmp_path: Path) -> None:
    """At the timeout the whole command is killed, the shell's children too: nothing it started goes on
    (here a background job that would write a file a little later)."""
    (tmp_path / "s.yaml").write_text("name: short\ntimeout: 0.5s\nsteps: []\n")
    done = cli("run", "s.yaml", "--quiet", "--exec", "(sleep 1.5; touch late.txt) & sleep 30", cwd=tmp_path)
    assert done.returncode == 1 and "did not finish within 0.5s; killed" in done.stderr, done.stderr
    time.sleep(2.0)
    assert not (tmp_path / "late.txt").exists()


def test_ctrl_c_is_passed_on_to_the_exec_command(tmp_path: Path) -> None:
    """SIGINT to mockbroker reaches the application, which ends; the run then reports as usual (no
    traceback) with the application's exit status."""
    (tmp_path / "s.yaml").write_text(EMPTY)
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "scenario", "run", "s.yaml", "--quiet", "--exec",
                             'trap "echo interrupted > got.txt; exit 5" INT; touch ready.txt; '
                             'while :; do sleep 0.05; done'],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "ready.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (tmp_path / "got.txt").read_text() == "interrupted\n"
    assert proc.returncode == 1 and "the app exited with 5" in out, out + err
    assert "Traceback" not in err, err


def test_a_run_with_a_control_port_prints_its_console_showing_the_steps(tmp_path: Path) -> None:
    """``--control-port`` gives the run's console (``console=`` after ``control=``, ``$MOCKBROKER_CONSOLE_URL``
    for the app): its page shows the scenario and its steps, here read by the --exec command as it plays."""
    (tmp_path / "s.yaml").write_text("name: watched\nsteps:\n  - name: watch produce\n"
                                     "    fault: {name: watch, api: Produce, action: observe, times: null}\n")
    fetch = (f'"{sys.executable}" -c "import urllib.request, os; '
             "open('page.html', 'w').write(urllib.request.urlopen(os.environ['MOCKBROKER_CONSOLE_URL']).read()"
             '.decode())"')
    done = cli("run", "s.yaml", "--control-port", "0", "--exec", f"sleep 0.3; {fetch}", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line.split("=", 1) for line in done.stdout.splitlines() if line.startswith(("control=", "console="))]
    assert [key for key, _ in lines] == ["control", "console"]
    assert lines[1][1] == lines[0][1] + "/ui/"
    page = (tmp_path / "page.html").read_text()
    assert "steps 1/1" in page and "watch produce" in page
