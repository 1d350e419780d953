"""The command line: exit codes scripts can trust and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from atmostonce.spec.properties import RECORD_WITNESS_PREFIX, PropertyId
from atmostonce.spec.step_kinds import StepKind


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "atmostonce", *args],
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize("args", [["bogus"], ["verify", "--bad"], ["clauses", "extra"], []])
def test_bad_arguments_exit_2_with_one_line(args: list[str]) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stderr.startswith("atmostonce: error: ")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_help_explains_the_commands_and_exit_codes() -> None:
    done = run("--help")
    assert done.returncode == 0
    assert "verify" in done.stdout
    assert "Exit codes" in done.stdout


@pytest.mark.long
def test_verify_passes_on_the_reference_and_prints_json() -> None:
    done = run("verify", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "pass"
    assert all(check["ok"] for check in report["checks"])
    assert {check["layer"] for check in report["checks"]} == {
        "spec", "model", "conformance", "simulation", "runtime"}


@pytest.mark.slow
def test_check_json_reports_the_exploration() -> None:
    done = run("check", "--json", "--faults", "1")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    for key in ("states", "transitions", "depth", "seconds", "states_per_second", "violations",
                "unwitnessed", "coverage", "findings", "double_run"):
        assert key in report
    assert report["violations"] == []
    assert report["unwitnessed"] == []


def test_check_with_partial_order_reduction_says_so_and_keeps_the_verdict() -> None:
    done = run("check", "--calls", "2", "--faults", "0", "--reduction", "por", "--json")
    assert done.returncode == 1, done.stderr  # at this bound three records are not reachable
    report = json.loads(done.stdout)
    plain = json.loads(run("check", "--calls", "2", "--faults", "0", "--json").stdout)
    assert report["reduction"] == "por"
    assert plain["reduction"] == "none"
    assert report["states"] < plain["states"]
    for key in ("ok", "violations", "unwitnessed", "witnessed"):
        assert report[key] == plain[key]


def test_check_of_a_mutant_exits_1_with_the_counterexample(tmp_path: object) -> None:
    out = f"{tmp_path}/trace.json"
    done = run("check", "--mutant", "second_worker", "--out", out)
    assert done.returncode == 1
    assert "counterexample of A-ONE-WORKER" in done.stdout
    with open(out) as handle:
        traces = json.load(handle)
    assert traces[0]["property"] == PropertyId.A_ONE_WORKER
    assert traces[0]["steps"][0]["action"] == StepKind.ASK


@pytest.mark.parametrize(("args", "message"), [
    (["check", "--workers", "9"], "--workers must be between 1 and 3, got 9"),
    (["check", "--calls", "two"], "expected a whole number, got 'two'"),
    (["check", "--tools", "read,writes"], "unknown effect class 'writes'"),
    (["check", "--mutant", "nope"], "unknown model mutant 'nope'"),
    (["check", "--reduction", "sleep"], "argument --reduction: invalid choice: 'sleep'"),
    (["check", "--session-default", "nope"], "unknown effect class 'nope'"),
    (["check", "--tools", "read~unclassified"], "framework metadata cannot claim unclassified"),
    (["check", "--tools", "read~maybe"], "unknown effect class 'maybe'"),
])
def test_check_rejects_bad_bounds_with_one_line(args: list[str], message: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stderr.count("\n") == 1


def test_mutants_lists_every_mutant_as_kind_and_name() -> None:
    from atmostonce.executor.mutants import EXECUTOR_MUTANTS
    from atmostonce.model.mutants import MUTANTS

    done = run("mutants")
    assert done.returncode == 0
    lines = [line for line in done.stdout.splitlines() if not line.startswith("# ")]
    expected = {f"model {m.name}" for m in MUTANTS} | {f"executor {m}" for m in EXECUTOR_MUTANTS}
    assert set(lines) == expected
    assert all(len(line.split()) == 2 for line in lines)
    score = [line for line in done.stdout.splitlines() if line.startswith("# ")]
    assert score, "the score over generated mutants (or that none is recorded) is said"
    assert "generated mutants" in score[0]


@pytest.mark.clause("D-22")
@pytest.mark.parametrize(("flags", "effect"), [
    ([], "read"), (["--hints-keep-default"], "non_idempotent_write")])
def test_check_explores_a_hinted_tool_under_both_choices_of_d22(
        flags: list[str], effect: str) -> None:
    done = run("check", "--tools", "non_idempotent_write~read", "--session-default",
               "non_idempotent_write", "--faults", "1", "--json", *flags)
    report = json.loads(done.stdout)
    assert report["violations"] == []
    assert report["complete"]
    assert report["config"]["session_default"] == "non_idempotent_write"
    assert report["config"].get("hints_may_lower", True) is not bool(flags)
    assert any(w.startswith(f"{RECORD_WITNESS_PREFIX}{effect}-") for w in report["witnessed"])
