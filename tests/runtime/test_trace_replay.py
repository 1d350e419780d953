"""`atmostonce replay --trace FILE --runtime`: a model trace replayed on real processes on
loopback (ledger, server on its SQLite journal, worker processes), each step a real action and
the observable state compared with the model's after it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from atmostonce.runtime.tools import Behaviour, WriteResult, run_tool
from atmostonce.spec.errors import SpecError
from tests.check.lockstep.test_trace_replay import double_run_trace, replayed

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
    assert "call 0 outcome_unknown" in report["steps"][4]["implementation"]
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


def test_a_queue_time_out_is_waited_for_until_the_history_shows_the_next_attempt(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path, ["read"], [
        {"action": "ask", "tool": "read"}, {"action": "expire", "call": 0},
        {"action": "hand", "call": 0, "worker": 0}, {"action": "go", "call": 0, "worker": 0}],
        crashes=0, timeouts=1)
    code, report = replayed(capsys, "--trace", str(trace), "--runtime")
    assert code == 0, report
    assert [s["verdict"] for s in report["steps"]] == ["agree"] * 4, report
    assert "call 0 running, 2 attempts (0 handed out)" in report["steps"][1]["implementation"]
    assert "2 attempts (1 handed out), 1 run" in report["steps"][3]["implementation"]


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


def test_a_broken_executors_server_diverges_on_the_double_run_at_the_time_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = double_run_trace(tmp_path)
    code, report = replayed(capsys, "--trace", str(trace), "--runtime", "--executor",
                            "atmostonce.executor.mutants:cancel_says_did_not_run")
    assert code == 1
    assert [s["verdict"] for s in report["steps"]] == \
        ["agree"] * 4 + ["DIVERGED"] + ["not reached"] * 4, report
    assert "is failed on the runtime but outcome_unknown in the model" in \
        report["steps"][4]["implementation"]


class _Context:
    """A tool's view of its worker, recording writes."""

    key = "s/turn-0/call-0"

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.written: list[str] = []

    async def write(self, payload: str) -> WriteResult:
        self.written.append(payload)
        return WriteResult(True, len(self.written))


def test_a_gated_run_writes_and_returns_only_when_its_gate_files_say(tmp_path: Path) -> None:
    gate = tmp_path / "gate"

    async def scripted() -> None:
        ctx = _Context()
        run = asyncio.create_task(run_tool("cancel_order", json.dumps(
            {"gate": str(gate), "duration": 10}), ctx, {}))
        await asyncio.sleep(0.1)
        assert ctx.written == []
        assert not run.done()
        (tmp_path / "gate.write").write_text("")
        await asyncio.wait_for(_until(lambda: bool(ctx.written)), 5)
        assert not run.done()
        (tmp_path / "gate.return").write_text("fail")
        ok, output = await asyncio.wait_for(run, 5)
        assert not ok
        assert "reported a failure" in output
        assert len(ctx.written) == 1

        skipped = _Context()
        (tmp_path / "other.return").write_text("ok")
        ok, _ = await run_tool("cancel_order", json.dumps(
            {"gate": str(tmp_path / "other"), "duration": 10}), skipped, {})
        assert ok
        assert skipped.written == []

        unreleased = _Context()
        ok, output = await run_tool("lookup_order", json.dumps(
            {"gate": str(tmp_path / "never"), "duration": 0.05}), unreleased, {})
        assert not ok
        assert "not released" in output

    asyncio.run(scripted())


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.01)


def test_a_gate_must_be_an_absolute_path() -> None:
    with pytest.raises(SpecError, match="absolute path"):
        Behaviour().for_call({"gate": "relative/gate"})
