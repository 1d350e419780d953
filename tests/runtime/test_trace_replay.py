"""`atmostonce replay --trace FILE --runtime`: a model trace replayed on real processes on
loopback (ledger, server on its SQLite journal, worker processes), each step a real action and
the observable state compared with the model's after it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atmostonce.cli import main
from tests.check.test_trace_replay import double_run_trace, replayed

pytestmark = pytest.mark.slow


def _trace(tmp_path: Path, tools: list[str], steps: list[dict[str, Any]], **bounds: int) -> Path:
    """A hand-written trace in the format `check --out` writes, with the default bounds."""
    config: dict[str, Any] = {"workers": 2, "calls": 2, "reasks": 0, "max_attempts": 2,
                              "crashes": 1, "partitions": 0, "restarts": 0, "timeouts": 0,
                              "faults": 1, "policy_changes": 0, "reconcile_crashes": 0,
                              "tools": tools, "fence": False, "ledger": "plain",
                              "mutant": None, **bounds}
    out = tmp_path / "written.json"
    out.write_text(json.dumps([{"format": "atmostonce-trace/1", "kind": "trace",
                                "property": "WRITTEN", "message": "", "config": config,
                                "steps": steps, "final": {}}]))
    return out


@pytest.mark.clause("TC-AMO-3", "D-6")
def test_the_documented_double_run_replays_on_the_runtime_with_two_runs_at_the_ledger(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = double_run_trace(tmp_path)
    code, report = replayed(capsys, "--trace", str(trace), "--name", "S-DOUBLE-RUN",
                            "--runtime")
    assert code == 0, report
    assert report["layer"] == "runtime"
    assert [s["verdict"] for s in report["steps"]] == ["agree"] * 9, report
    assert "call 0 failed" in report["steps"][4]["implementation"]
    ledger = report["notes"][-1]
    assert ledger.startswith("the ledger holds 2 runs: "), ledger
    assert ledger.count("cancel_order for s/turn-") == 2
    assert ledger.count("still going") == 2


def test_scripted_tool_runs_write_and_return_at_the_traces_steps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path, ["idempotent_write", "read"], [
        {"action": "ask", "tool": "idempotent_write"},
        {"action": "hand", "call": 0, "worker": 0}, {"action": "go", "call": 0, "worker": 0},
        {"action": "apply", "call": 0, "worker": 0},
        {"action": "finish_ok", "call": 0, "worker": 0},
        {"action": "ask", "tool": "read"},
        {"action": "hand", "call": 1, "worker": 0}, {"action": "go", "call": 1, "worker": 0},
        {"action": "finish_fail", "call": 1, "worker": 0}])
    code, report = replayed(capsys, "--trace", str(trace), "--runtime")
    assert code == 0, report
    assert [s["verdict"] for s in report["steps"]] == ["agree"] * 9, report
    assert "effects: refund 0" in report["steps"][2]["implementation"]
    assert "effects: refund 1" in report["steps"][3]["implementation"]
    assert "call 0 succeeded" in report["steps"][4]["implementation"]
    assert "call 1 failed" in report["steps"][8]["implementation"]
    ledger = report["notes"][-1]
    assert "returned" in ledger
    assert "tool_failed" in ledger
    workers = {part.split(" on ")[1].split(":")[0] for part in ledger.split("; ")}
    assert len(workers) == 2, "a worker whose runs are over stops; the next hand-out starts "\
        "a fresh process"


def test_a_step_the_runtime_cannot_take_is_reported_not_scriptable_never_agreeing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path, ["read"], [
        {"action": "ask", "tool": "read"}, {"action": "hand", "call": 0, "worker": 0},
        {"action": "crash", "worker": 0}, {"action": "detect", "worker": 0}])
    code, report = replayed(capsys, "--trace", str(trace), "--runtime")
    assert code == 0, report
    assert [s["verdict"] for s in report["steps"]] == [
        "agree", "agree", "not scriptable", "not reached"], report
    assert "go-ahead" in report["steps"][2]["implementation"]
    capsys.readouterr()
    assert main(["replay", "--trace", str(trace), "--runtime"]) == 0
    assert "verdict: no step diverged (2 agree, 1 not scriptable, 1 not reached)" in \
        capsys.readouterr().out
