"""The peer corpus: what the real Dex publishes about tool calls and Steps, each behaviour as a
trace `atmostonce replay --trace` runs, on the executor core and on the real runtime.

Each file here is a trace in the format `atmostonce check --out` writes, with four fields of its
own: `source` names where Dex (or its sibling agent, superagent) publishes the behaviour,
`message` says what that source says, `ours` what atmostonce does, and `mark` whether the two
agree; `expect` pins, step by step, what the core's record says after it. Where atmostonce
differs from Dex the trace pins atmostonce's behaviour and `docs/dex.md` gives the reason.
Dex itself cannot run here (`docs/dex.md`), so the comparison is with what it publishes.

    atmostonce replay --trace tests/peer/peer-04-single-attempt-timed-out-is-unknown.json
    atmostonce replay --trace tests/peer/peer-04-single-attempt-timed-out-is-unknown.json --runtime
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atmostonce.cli import main

HERE = Path(__file__).resolve().parent
TRACES = sorted(HERE.glob("peer-*.json"))
SOURCES = ("superdurable/dex", "superdurable/superagent")


def _id(path: Path) -> str:
    return path.stem


def replay(capsys: pytest.CaptureFixture[str], path: Path, *flags: str
           ) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["replay", "--trace", str(path), "--json", *flags])
    return code, json.loads(capsys.readouterr().out)


def test_the_corpus_holds_at_least_twelve_traces_each_naming_its_source() -> None:
    assert len(TRACES) >= 12
    for path in TRACES:
        trace = json.loads(path.read_text())
        assert trace["property"] == path.stem
        assert trace["source"].startswith(SOURCES), path.name
        assert trace["message"], path.name
        assert trace["ours"], path.name
        assert trace["mark"].startswith(("agrees", "differs")), path.name
        assert trace["expect"], path.name
        if trace["mark"].startswith("differs"):
            assert "docs/dex.md" in trace["ours"], f"{path.name} differs without a pointer"


@pytest.mark.clause("D-3", "D-4", "D-5", "D-8", "D-9", "D-10", "TC-KEY-1", "TC-REC-REJ")
@pytest.mark.parametrize("path", TRACES, ids=_id)
def test_the_trace_replays_on_the_executor_core_as_dex_publishes_it(
        path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = replay(capsys, path)
    steps = report["steps"]
    assert code == 0, report
    assert [s["verdict"] for s in steps] == ["agree"] * len(steps)
    for index, words in json.loads(path.read_text())["expect"]:
        assert words in steps[index]["implementation"], (index, steps[index])


@pytest.mark.slow
@pytest.mark.clause("D-4", "D-5", "D-8", "D-9", "D-10")
@pytest.mark.parametrize("path", TRACES, ids=_id)
def test_the_trace_replays_on_the_real_runtime(
        path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = replay(capsys, path, "--runtime")
    assert code == 0, report
    assert report["layer"] == "runtime"
    assert [s["verdict"] for s in report["steps"]] == ["agree"] * len(report["steps"]), report
