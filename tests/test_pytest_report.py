"""The pytest plugin's HTML reports (``--mockbroker-report``, the marker's ``report=``), exercised by inner
pytest sessions (pytester) whose tests drive confluent-kafka against their mock clusters and fail on purpose."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mockbroker.pytest_report import file_name

pytestmark = pytest.mark.clients


INNER = '''
import time

import pytest
from confluent_kafka import Consumer, Producer

VALUES = [b"plain text", b"<script>alert(1)</script>"]


def produce(bootstrap, topic="orders"):
    producer = Producer({"bootstrap.servers": bootstrap, "retry.backoff.ms": 20, "linger.ms": 1})
    for value in VALUES:
        producer.produce(topic, value)
    assert producer.flush(15) == 0


def consume(bootstrap, group, count):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    got, deadline = [], time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got.append(message.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    return got


def test_fails(mock_cluster, kafka_bootstrap):
    with mock_cluster.fault(api="Produce", error="NOT_LEADER_OR_FOLLOWER", name="one refusal") as rule:
        produce(kafka_bootstrap)
    assert rule.hits == 1
    assert consume(kafka_bootstrap, "billing", 2) == VALUES
    assert 1 + 1 == 3, "deliberately failed"


def test_passes(mock_cluster, kafka_bootstrap):
    produce(kafka_bootstrap)


@pytest.mark.mockbroker(report="always")
def test_kept_although_it_passes(mock_cluster):
    mock_cluster.create_topic("kept", 1)


@pytest.mark.parametrize("n", [7])
def test_two_clusters(mock_cluster_factory, n):
    first, second = mock_cluster_factory(topics={"first-topic": 1}), mock_cluster_factory(topics={"second-topic": 1})
    assert n == 0


def test_scenario(mock_scenario):
    with mock_scenario(SCENARIO) as run:
        produce(run.bootstrap_servers, topic="payments")
        assert run.wait_steps(timeout=10)
    assert run.result.passed, run.result.report()
    pytest.fail("deliberately failed after the scenario")
'''

SCENARIO = '''
name: report-check
cluster: {topics: [{name: payments, partitions: 1}]}
steps:
  - when: {records: {topic: payments, at_least: 1}}
    fault: {name: watch, api: Produce, action: observe, times: null}
expect:
  - records: {topic: payments, exactly: 2}
'''


def part(page: str, name: str) -> str:
    start = page.index(f'<section id="{name}">')
    end = page.find('<section id="', start + 1)
    return page[start:end if end > 0 else len(page)]


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[pytest.RunResult, Path]:
    """One inner session with ``--mockbroker-report=reports`` (reports of failures, and of the marked test),
    shared by the tests below (pytester's own fixture is per test)."""
    pytester_dir = tmp_path_factory.mktemp("inner")
    scenario = pytester_dir / "report-check.yaml"
    scenario.write_text(SCENARIO)
    (pytester_dir / "test_inner.py").write_text(f"SCENARIO = {str(scenario)!r}\n" + INNER)
    (pytester_dir / "pytest.ini").write_text("[pytest]\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--mockbroker-report=reports",
                           "--mockbroker-report-when=on-failure", "test_inner.py"], cwd=pytester_dir,
                          capture_output=True, text=True, timeout=180)
    result = pytest.RunResult(proc.returncode, proc.stdout.splitlines(), proc.stderr.splitlines(), 0.0)
    return result, pytester_dir / "reports"


def test_the_failing_tests_and_the_marked_one_have_reports(failed_run: tuple[pytest.RunResult, Path]) -> None:
    result, reports = failed_run
    result.assert_outcomes(passed=2, failed=3)
    assert sorted(p.name for p in reports.iterdir()) == sorted([
        "test_inner.py__test_fails.html", "test_inner.py__test_kept_although_it_passes.html",
        "test_inner.py__test_two_clusters[7].html", "test_inner.py__test_two_clusters[7]-2.html",
        "test_inner.py__test_scenario.html"])
    assert any("mockbroker: 5 HTML report(s) in" in line for line in result.outlines)


def test_the_output_names_the_failures_reports(failed_run: tuple[pytest.RunResult, Path]) -> None:
    result, reports = failed_run
    out = "\n".join(result.outlines)
    for name in ("test_fails", "test_two_clusters[7]", "test_two_clusters[7]-2", "test_scenario"):
        assert f"report: {reports / ('test_inner.py__' + name + '.html')}" in out, name
    assert "test_kept_although_it_passes.html" not in out.split("short test summary")[0].split("FAILURES")[-1]


def test_the_failures_report(failed_run: tuple[pytest.RunResult, Path]) -> None:
    _, reports = failed_run
    page = (reports / "test_inner.py__test_fails.html").read_text(encoding="utf-8")
    head = page[:page.index('<section id="cluster">')]
    assert "test_inner.py::test_fails" in head and '<span class="pill bad">failed</span>' in head
    assert "deliberately failed" in head  # the failure's text
    topics = part(page, "topics")
    assert "plain text" in topics and "&lt;script&gt;alert(1)&lt;/script&gt;" in topics and "<script" not in page
    faults = part(page, "faults")
    row = next(r for r in re.findall(r"<tr>(.*?)</tr>", faults) if "one refusal" in r)
    assert "NOT_LEADER_OR_FOLLOWER" in row and "<td>1 / 1</td>" in row and ">removed<" in row
    assert re.findall(r'\b(?:src|href)\s*=\s*"(?!#)[^"]*"', page) == [] and "http" not in page


def test_the_failures_report_has_the_groups_offsets(failed_run: tuple[pytest.RunResult, Path]) -> None:
    page = (failed_run[1] / "test_inner.py__test_fails.html").read_text(encoding="utf-8")
    assert "billing" in part(page, "groups") and ">2<" in part(page, "groups")


def test_the_failures_report_has_the_journals_produce_rows(failed_run: tuple[pytest.RunResult, Path]) -> None:
    page = (failed_run[1] / "test_inner.py__test_fails.html").read_text(encoding="utf-8")
    rows = [r for r in re.findall(r"<tr[^>]*>(.*?)</tr>", part(page, "journal")) if "Produce" in r]
    assert rows and any("NOT_LEADER_OR_FOLLOWER" in r for r in rows)


def test_each_of_two_clusters_has_its_report(failed_run: tuple[pytest.RunResult, Path]) -> None:
    _, reports = failed_run
    first = (reports / "test_inner.py__test_two_clusters[7].html").read_text(encoding="utf-8")
    second = (reports / "test_inner.py__test_two_clusters[7]-2.html").read_text(encoding="utf-8")
    assert 'id="topic-first-topic"' in first and 'id="topic-second-topic"' not in first
    assert 'id="topic-second-topic"' in second


def test_the_passing_marked_test_and_the_scenario(failed_run: tuple[pytest.RunResult, Path]) -> None:
    _, reports = failed_run
    kept = (reports / "test_inner.py__test_kept_although_it_passes.html").read_text(encoding="utf-8")
    assert '<span class="pill ok">passed</span>' in kept and 'id="topic-kept"' in kept
    scenario = (reports / "test_inner.py__test_scenario.html").read_text(encoding="utf-8")
    steps = part(scenario, "scenario")
    assert "fault watch added (observe)" in steps and '<span class="pill ok">ok</span>' in steps
    assert "watch" in part(scenario, "faults") and 'id="topic-payments"' in scenario


def test_always_and_the_default_folder(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_light='''
import pytest

def test_plain(mock_cluster):
    mock_cluster.create_topic("plain", 1)

@pytest.mark.mockbroker(report=None)
def test_off(mock_cluster):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mockbroker-report", "out")  # always
    result.assert_outcomes(passed=2)
    assert sorted(p.name for p in (pytester.path / "out").iterdir()) == ["test_light.py__test_plain.html"]
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mockbroker-report", "failures",
                                           "--mockbroker-report-when=on-failure")
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "failures").exists()  # nothing failed
    pytester.makepyfile(test_light='''
import pytest

@pytest.mark.mockbroker(report="always")
def test_marked(mock_cluster):
    pass

def test_unmarked_failure(mock_cluster):
    assert False
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    default = pytester.path / "mockbroker-reports"
    assert sorted(p.name for p in default.iterdir()) == ["test_light.py__test_marked.html"]


def test_a_bad_report_value_names_the_good_ones(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="import pytest\n\n@pytest.mark.mockbroker(report='sometimes')\n"
                                 "def test_x(mock_cluster):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*report='sometimes' is not one of 'on-failure', 'always', None*"])
    assert result.ret != 0


@pytest.mark.parametrize(("nodeid", "name"), [
    ("tests/test_a.py::TestX::test_b[p-1]", "tests_test_a.py__TestX__test_b[p-1].html"),
    ("t.py::test_x[a/b c:d]", "t.py__test_x[a_b_c_d].html"),
    ("../up.py::test", "_up.py__test.html"),
])
def test_file_names(nodeid: str, name: str) -> None:
    assert file_name(nodeid) == name


def test_long_node_ids_are_cut_and_stay_apart() -> None:
    long = "t.py::test_x[" + "a" * 400
    first, second = file_name(long + "1]"), file_name(long + "2]", 2)
    assert len(first) < 170 and first != second.replace("-2.html", ".html") and second.endswith("-2.html")
