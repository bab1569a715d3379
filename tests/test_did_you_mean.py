"""Did-you-mean everywhere a name can be wrong (issue 50): API names, error codes, fault actions and fields
from the Python API, the pytest marker, and scenario files (where every problem of a step is its own line
naming the key); the HTTP control API's are in tests/control/test_control_strict.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.scenarios import ScenarioError, load_text


@pytest.mark.parametrize(("spec", "message"), [
    ({"api": "Produse"}, "unknown API 'Produse' (did you mean 'Produce'?)"),
    ({"api": "endtx", "error": 6}, "unknown API 'endtx' (did you mean 'EndTxn'?)"),
    ({"api": "Produce", "error": "NOT_LEADER"},
     "unknown error code 'NOT_LEADER' (did you mean 'NOT_LEADER_OR_FOLLOWER'?)"),
    ({"api": "Produce", "error": "UNKNOWN_TOPIC"},
     "unknown error code 'UNKNOWN_TOPIC' (did you mean 'UNKNOWN_TOPIC_ID'?)"),
    ({"api": "Fetch", "action": "dealy"}, "unknown action 'dealy' (did you mean 'delay'?)"),
    ({"api": "Fetch", "action": "delay", "delay_ms": 5, "tims": 2},
     "unknown fault field 'tims' (did you mean 'times'?)"),
    ({"api": "Produse", "error": "NOT_LEADER"}, "unknown API 'Produse' (did you mean 'Produce'?); unknown error "
                                                "code 'NOT_LEADER' (did you mean 'NOT_LEADER_OR_FOLLOWER'?)"),
])
def test_add_fault_names_the_nearest(spec: dict[str, object], message: str) -> None:
    cluster = MockCluster()  # (not started: the rule is refused before anything is added)
    with pytest.raises(ValueError) as caught:
        cluster.add_fault(**spec)
    assert str(caught.value) == message
    assert list(cluster.faults.listed()) == []


def test_the_journal_refuses_an_api_no_request_has() -> None:
    """``wait_for_requests("Produse")`` would wait its whole timeout for a name no request has."""
    cluster = MockCluster()
    with pytest.raises(ValueError, match=r"^unknown API 'Produse' \(did you mean 'Produce'\?\)$"):
        cluster.wait_for_requests("Produse", 1, timeout=30)
    assert cluster.journal.entries(api="produce") == []  # Kafka's name in any case


def test_the_exact_name_in_another_case_is_taken() -> None:
    rule = MockCluster().add_fault(api="endtxn", error="not_coordinator")
    assert rule.apis == {26} and rule.error == 16


def test_one_helper_for_every_name() -> None:
    from mockbroker.nearest import did_you_mean

    assert did_you_mean("auto.create.topic.enable", ["auto.create.topics.enable", "num.partitions"]) == \
        "auto.create.topics.enable"
    assert did_you_mean("UNKNOWN", ["UNKNOWN_SERVER_ERROR"]) is None  # a prefix counts only when asked
    assert did_you_mean("unknown", ["UNKNOWN_SERVER_ERROR", "UNKNOWN_TOPIC_OR_PARTITION"], prefix=True) == \
        "UNKNOWN_SERVER_ERROR"
    assert did_you_mean("zzz", ["produce", "fetch"]) is None


def test_a_latency_preset_name_is_checked() -> None:
    with pytest.raises(ValueError, match=r"^latency: unknown latency preset 'realistc' \(did you mean 'realistic'\?\)"):
        MockCluster(latency="realistc")


# -- scenario files: every problem of a step, each naming its key ------------------------------------------

TWO_WRONG = """\
name: typos
cluster: {topics: [{name: t, partitions: 1}]}
steps:
  - fault: {api: Produse, error: NOT_LEADER}
  - when: {records: {topik: t, at_leest: 3}}
    action: reset
  - {at: soon, action: move_leader, topic: t, partition: x}
expect:
  - committed: {topic: t, exacly: 10}
  - no_open_transactions: {topic: t, strict: true}
  - requests: {api: Produse, error: NOT_LEADER, at_least: 1}
"""

TWO_WRONG_LINES = [
    "4: steps[0].fault.api: unknown API 'Produse' (did you mean 'Produce'?)",
    "4: steps[0].fault.error: unknown error code 'NOT_LEADER' (did you mean 'NOT_LEADER_OR_FOLLOWER'?)",
    "5: steps[1].when.records.topik: Additional properties are not allowed ('topik' was unexpected) "
    "(did you mean 'topic'?)",
    "5: steps[1].when.records.at_leest: Additional properties are not allowed ('at_leest' was unexpected) "
    "(did you mean 'at_least'?)",
    "7: steps[2].at: 'soon' does not match",
    "7: steps[2].partition: 'x' is not of type 'integer'",
    "9: expect[0].committed.exacly: Additional properties are not allowed ('exacly' was unexpected) "
    "(did you mean 'exactly'?)",
    "10: expect[1].no_open_transactions.strict: Additional properties are not allowed ('strict' was unexpected)",
    "11: expect[2].requests.api: unknown API 'Produse' (did you mean 'Produce'?)",
    "11: expect[2].requests.error: unknown error code 'NOT_LEADER' (did you mean 'NOT_LEADER_OR_FOLLOWER'?)",
]


def test_a_step_with_two_wrong_keys_gets_both_reported(tmp_path: Path) -> None:
    """``scenario check``: each wrong key of a step is its own line (file:line: where: what), named, with the
    nearest known name; a misspelt key is not reported again as a missing one; exit 2."""
    (tmp_path / "typos.yaml").write_text(TWO_WRONG)
    done = subprocess.run([sys.executable, "-m", "mockbroker", "scenario", "check", "typos.yaml"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == len(TWO_WRONG_LINES), done.stderr
    for got, wanted in zip(lines, TWO_WRONG_LINES, strict=True):
        assert got.startswith(f"typos.yaml:{wanted}"), (got, wanted)


def test_a_wrong_latency_preset_in_a_scenario() -> None:
    with pytest.raises(ScenarioError) as caught:
        load_text("name: x\ncluster: {latency: realistc}\nsteps: []\n")
    assert caught.value.problems == ["<scenario>:2: cluster.latency: 'realistc' is not one of ['realistic'] "
                                     "(did you mean 'realistic'?)"]


def test_a_misspelt_marker_option_names_the_nearest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="import pytest\n\n@pytest.mark.mockbroker(latancy='realistic')\n"
                                 "def test_x(mock_cluster):\n    pass\n")
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["*unknown cluster option(s)*'latancy'*(did you mean 'latency'?)*"])
    assert result.ret != 0
