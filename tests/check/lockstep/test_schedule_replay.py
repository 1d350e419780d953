"""`atmostonce replay --schedule`: the command a conformance disagreement prints reruns that
one schedule on the executor and shows the same disagreement, step by step; the notation reads
back what the lockstep logs; bad notation, or a step the model does not allow, is bad input."""

from __future__ import annotations

import shlex

import pytest

from atmostonce import verify
from atmostonce.check.executors.loading import load_factory
from atmostonce.check.lockstep import schedule_replay
from atmostonce.check.lockstep.conformance import Lockstep, schedules
from atmostonce.cli import main
from atmostonce.executor import reference
from atmostonce.model.check import DEFAULT

REPLAY = "replay step by step: "


def printed_replay(path: str, depth: int) -> tuple[str, list[str]]:
    """The disagreement verify's conformance layer reports for the executor at `path` within
    `depth` steps, and the argv of the replay command it prints."""
    result = verify.check_conformance(path, load_factory(path), depth=depth)
    assert not result.ok
    (line,) = [d for d in result.details if d.startswith(REPLAY)]
    argv = shlex.split(line.removeprefix(REPLAY))
    assert argv[:2] == ["atmostonce", "replay"]
    message = result.details[0].rsplit(" (fence", 1)[0]
    return message, argv[1:]


@pytest.mark.clause("TC-EFF-NONIDEM", "D-6", "D-4")
@pytest.mark.parametrize(("mutant", "flag", "depth"), [
    ("retry_non_idempotent", None, verify.QUICK_DEPTH),
    ("fence_ignored", "--fence", 7),
    ("cancel_records_failed_ignored", "--cancel-records-failed", verify.QUICK_DEPTH),
])
def test_a_disagreements_printed_command_reproduces_it(
        mutant: str, flag: str | None, depth: int, capsys: pytest.CaptureFixture[str]) -> None:
    """Within `depth` the schedules catch the mutant (at the quick depth the fence mutant is
    caught by the probes instead, which print no schedule)."""
    message, argv = printed_replay(f"atmostonce.executor.mutants:{mutant}", depth)
    choices = [a for a in argv if a in ("--fence", "--cancel-records-failed")]
    assert choices == ([flag] if flag else [])
    capsys.readouterr()
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert out.startswith("schedule notation:")
    assert f"verdict: DISAGREES: step {len(argv[2].split('->'))} " in out
    assert message in out
    on_reference = [a if not a.startswith("atmostonce.executor.mutants:")
                    else "atmostonce.executor:reference" for a in argv]
    assert main(on_reference) == 0
    assert "verdict: every step agrees" in capsys.readouterr().out


def test_each_step_shows_the_models_sentence_and_the_executors_commands(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--schedule", "ask(0) -> hand(0, 0) -> go(0, 0) -> finish_ok(0, 0)"]
                ) == 0
    out = capsys.readouterr().out
    assert "asks for tool read" in out
    assert "GoAhead(w0, s/turn-0/call-0#1)" in out
    assert "Publish(turn-0/call-0 succeeded)" in out
    assert "verdict: every step agrees (4 steps)" in out


def test_the_notation_reads_back_every_schedule_the_lockstep_logs() -> None:
    seen = 0
    for labels in schedules(DEFAULT, 4, edges=True):
        lock = Lockstep(DEFAULT, reference)
        for label in labels:
            lock.step(label)
        assert schedule_replay.parse(schedule_replay.text(lock.log)) == labels
        seen += 1
    assert seen > 50


@pytest.mark.parametrize(("schedule", "says"), [
    ("", "--schedule is empty"),
    ("ask(1) -> ", "step 2 '' is not KIND"),
    ("ask(1) -> fly(0)", "unknown step kind 'fly'"),
    ("ask(1 -> hand(0, 0)", "step 1 'ask(1' is not KIND"),
    ("ask(1) => hand(0, 0)", "is not KIND"),
    ("hand(0, 0)", "step 1 hand(0, 0) is not a step the model allows there (it allows: ask(0)"),
    ("ask(9)", "step 1 ask(9) is not a step the model allows"),
])
def test_bad_notation_is_one_line_and_exit_2(schedule: str, says: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--schedule", schedule]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert says in captured.err
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize("argv", [
    ["replay", "3", "--schedule", "ask(0)"],
    ["replay", "--fence"],
    ["replay", "--schedule", "ask(0)", "--call", "s/turn-0/call-0"],
])
def test_schedule_options_out_of_place_are_bad_input(argv: list[str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_readme_explains_the_notation_and_its_example_reproduces(
        capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert "https://docs.superdurable.io/agent-frameworks/tool-calls/" in readme
    assert "A schedule is the model's steps in order" in readme
    (line,) = [x for x in readme.splitlines() if x.startswith(REPLAY)]
    argv = shlex.split(line.removeprefix(REPLAY))[1:]
    assert main(argv) == 1
    assert "verdict: DISAGREES: step 4 restart:" in capsys.readouterr().out


def test_the_json_replay_carries_each_step_and_the_verdict(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    schedule = "ask(2) -> approve(0) -> hand(0, 0) -> restart"
    assert main(["replay", "--schedule", schedule, "--json", "--executor",
                 "atmostonce.executor.mutants:retry_non_idempotent"]) == 1
    shown = json.loads(capsys.readouterr().out)
    assert shown["verdict"] == "disagrees"
    assert [s["verdict"] for s in shown["steps"]] == ["agree"] * 3 + ["DISAGREES"]
    assert shown["schedule"] == schedule
    assert "GoAhead(w0, s/turn-0/call-0#1)" in shown["steps"][2]["executor"]
