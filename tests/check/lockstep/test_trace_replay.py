"""`atmostonce replay --trace`: a trace `check --out` saved, replayed on the executor core in
lockstep with the model, step by step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atmostonce.cli import main
from atmostonce.spec.properties import PropertyId

DOUBLE_RUN_BOUNDS = ("--tools", "non_idempotent_write", "--crashes", "0", "--partitions", "0",
                     "--restarts", "0", "--reconcile-crashes", "0", "--policy-changes", "0")
"""Bounds small enough for a quick check that still witness the documented double run."""


def saved(tmp_path: Path, *bounds: str) -> Path:
    out = tmp_path / "traces.json"
    main(["check", *bounds, "--out", str(out), "--json"])
    return out


def replayed(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["replay", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def double_run_trace(tmp_path: Path) -> Path:
    return saved(tmp_path, *DOUBLE_RUN_BOUNDS)


def test_a_model_mutants_counterexample_diverges_at_the_step_the_mutant_goes_wrong(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = saved(tmp_path, "--mutant", "timeout_as_tool_failure")
    code, report = replayed(capsys, "--trace", str(trace))
    assert code == 1
    assert report["verdict"] == "diverged"
    verdicts = [s["verdict"] for s in report["steps"]]
    assert verdicts == ["agree", "agree", "agree", "DIVERGED"]
    last = report["steps"][-1]
    assert "times out" in last["model"]
    assert "running on the executor but failed in the model" in last["implementation"]
    assert "Cancel(" in last["implementation"]
    capsys.readouterr()
    assert main(["replay", "--trace", str(trace)]) == 1
    text = capsys.readouterr().out
    assert " 4. DIVERGED" in text
    assert text.rstrip().endswith("verdict: DIVERGED (3 agree, 1 DIVERGED)")


@pytest.mark.clause("TC-AMO-3", "D-6")
def test_the_documented_double_run_replays_on_the_core_with_every_step_agreeing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = double_run_trace(tmp_path)
    code, report = replayed(capsys, "--trace", str(trace), "--name", "S-DOUBLE-RUN")
    assert code == 0
    assert report["trace"] == PropertyId.S_DOUBLE_RUN
    assert [s["verdict"] for s in report["steps"]] == ["agree"] * 9
    assert "GoAhead(w1, s/turn-1/call-1#1)" in report["steps"][7]["implementation"]
    capsys.readouterr()
    assert main(["replay", "--trace", str(trace)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("verdict: every step agrees (9 agree)")


def test_a_broken_executor_diverges_on_the_double_run_where_it_breaks_the_model(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = double_run_trace(tmp_path)
    code, report = replayed(capsys, "--trace", str(trace), "--executor",
                            "atmostonce.executor.mutants:cancel_says_did_not_run")
    assert code == 1
    verdicts = [s["verdict"] for s in report["steps"]]
    assert verdicts == ["agree"] * 4 + ["DIVERGED"] + ["not reached"] * 4
    assert "times out" in report["steps"][4]["model"]


def _rewritten(tmp_path: Path, source: Path, change: Any) -> Path:
    traces = json.loads(source.read_text())
    change(traces)
    out = tmp_path / f"{change.__name__}.json"
    out.write_text(json.dumps(traces))
    return out


def _bad_inputs(tmp_path: Path) -> list[tuple[list[str], str]]:
    trace = double_run_trace(tmp_path)
    (tmp_path / "not-json.json").write_text("{")

    def foreign(traces: list[dict[str, Any]]) -> None:
        traces[0]["format"] = "other/1"

    def impossible(traces: list[dict[str, Any]]) -> None:
        traces[0]["steps"][2] = {"action": "hand", "call": 0, "worker": 7}

    def bad_bound(traces: list[dict[str, Any]]) -> None:
        traces[0]["config"]["workers"] = 9

    return [
        (["--trace", str(tmp_path / "missing.json")], "cannot read it"),
        (["--trace", str(tmp_path / "not-json.json")], "not JSON"),
        (["--trace", str(_rewritten(tmp_path, trace, foreign))], "atmostonce-trace/1"),
        (["--trace", str(trace), "--name", "no-such-trace"], "no trace of that name"),
        (["--trace", str(_rewritten(tmp_path, trace, impossible))],
         "step 3 {\"action\": \"hand\", \"call\": 0, \"worker\": 7} is not a step the model"),
        (["--trace", str(_rewritten(tmp_path, trace, bad_bound))], "bad config"),
        (["--trace", str(trace), "3"], "not both"),
        (["--name", "S-DOUBLE-RUN"], "--name needs --trace FILE"),
        (["--runtime"], "--runtime needs --trace FILE"),
        ([], "replay needs a SEED"),
    ]


def test_bad_trace_input_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args, words in _bad_inputs(tmp_path):
        capsys.readouterr()
        assert main(["replay", *args]) == 2, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, (args, err)
        assert err.startswith("atmostonce: error: "), (args, err)
        assert words in err, (args, err)
