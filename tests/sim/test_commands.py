"""`atmostonce simulate` and `atmostonce replay`: a readable table or one JSON object, exit 0
when nothing broke, 1 with the seed and the command that replays it, 2 on bad input."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import pytest

from atmostonce import cli
from atmostonce.sim.commands import register
from atmostonce.sim.shapes import SHAPES
from atmostonce.spec.properties import PropertyId

MUTANT = "atmostonce.executor.mutants:approval_default_ignored"
Invoke = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Invoke:
    """Run the real `atmostonce` main with `simulate` and `replay` registered."""
    build = cli.build_parser

    def wired() -> argparse.ArgumentParser:
        parser = build()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        if "simulate" not in sub.choices:
            register(sub)
        return parser

    monkeypatch.setattr(cli, "build_parser", wired)

    def invoke(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def test_simulate_prints_a_table_and_exits_0_when_clean(run: Invoke) -> None:
    code, out, _ = run("simulate", "--seeds", "3", "--profile", "crashy")
    assert code == 0
    for text in ("records per effect class", "non_idempotent_write", "retries",
                 "double runs", "verdict: PASS"):
        assert text in out


def test_simulate_json_has_the_promised_keys(run: Invoke) -> None:
    code, out, _ = run("simulate", "--seeds", "2", "--first-seed", "5", "--profile", "none",
                       "--json")
    assert code == 0
    report = json.loads(out)
    for key in ("seeds", "calls", "seconds", "calls_per_second", "violations", "double_runs"):
        assert key in report
    assert report["seeds"] == 2
    assert report["first_seed"] == 5
    assert report["violations"] == []
    assert report["calls"] > 0


def test_simulate_prints_and_reports_the_shapes(run: Invoke) -> None:
    code, out, _ = run("simulate", "--seeds", "2", "--profile", "restarts")
    assert code == 0
    assert "shapes: policy+hints" in out
    code, out, _ = run("simulate", "--seeds", "2", "--profile", "restarts", "--json")
    assert code == 0
    assert set(json.loads(out)["shapes"]) == {shape.key for shape in SHAPES}


def test_simulate_of_a_mutant_exits_1_with_seed_and_replay_command(run: Invoke) -> None:
    code, out, _ = run("simulate", "--seeds", "2", "--executor", MUTANT, "--json")
    assert code == 1
    report = json.loads(out)
    violation = report["violations"][0]
    assert violation["property"] in (PropertyId.A_APPROVAL, PropertyId.A_POLICY_SNAPSHOT)
    assert violation["replay"] == (
        f"atmostonce replay {violation['seed']} --profile chaos --executor {MUTANT}")
    code, text, _ = run("simulate", "--seeds", "1", "--executor", MUTANT)
    assert code == 1
    assert "verdict: FAIL" in text
    assert "replay: atmostonce replay 0" in text


def test_replay_prints_the_events_and_the_verdict(run: Invoke) -> None:
    code, out, _ = run("replay", "3", "--profile", "restarts")
    assert code == 0
    assert "events:" in out
    assert "CallAsked" in out
    assert "verdict: PASS" in out
    code, out, _ = run("replay", "0", "--executor", MUTANT, "--json", "--faults", "none")
    assert code == 1
    report = json.loads(out)
    assert report["faults"] == []
    assert report["verdict"] == "fail"
    assert any(v["property"] == PropertyId.A_APPROVAL for v in report["violations"])


@pytest.mark.parametrize(("argv", "says"), [
    (["simulate", "--profile", "bogus"], "unknown fault profile 'bogus'"),
    (["simulate", "--executor", "no-colon"], "malformed executor path"),
    (["simulate", "--executor", "atmostonce.nowhere:f"], "cannot import executor module"),
    (["simulate", "--executor", "builtins:repr"], "does not satisfy"),
    (["simulate", "--seeds", "0"], "expected at least 1"),
    (["replay", "x"], "expected a whole number"),
    (["replay", "1", "--faults", "99"], "out of range"),
])
def test_bad_input_exits_2_with_one_line(run: Invoke, argv: list[str], says: str) -> None:
    code, out, err = run(*argv)
    assert code == 2
    assert out == ""
    assert err.startswith("atmostonce: error: ")
    assert says in err
    assert err.count("\n") == 1
