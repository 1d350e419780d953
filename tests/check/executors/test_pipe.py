"""The executor protocol over a pipe (`--executor-cmd`): the reference executor served by
`python -m atmostonce.executor.stdio` is checked exactly as in process, and a child that exits,
hangs, writes something else or answers out of turn is the executor's finding, never a crash of
the harness; a command that cannot start is bad input."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from atmostonce import cli
from atmostonce.check.executors import pipe
from atmostonce.check.lockstep.conformance import replay_schedules
from atmostonce.check.lockstep.state import executor_config
from atmostonce.check.probes.table import first_problems
from atmostonce.executor import reference
from atmostonce.model.check import DEFAULT
from atmostonce.sim.campaign import campaign

SERVED = f"{shlex.quote(sys.executable)} -m atmostonce.executor.stdio atmostonce.executor:reference"
CHILDREN = Path(__file__).parent / "children"
ROOT = Path(__file__).parents[3]


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """The reference executor over the pipe, as `--executor-cmd` sets it up; its child is
    stopped after the test, and a child that did not fail leaves no file behind."""
    monkeypatch.setenv(pipe.COMMAND_VARIABLE, "")
    monkeypatch.setenv(pipe.TIMEOUT_VARIABLE, "")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    yield pipe.use(SERVED, timeout=20.0)
    pipe.close_children()
    assert list(tmp_path.iterdir()) == []


def test_schedules_over_the_pipe_agree_as_in_process(served: str) -> None:
    inside = replay_schedules(DEFAULT, reference, 5)
    piped = replay_schedules(DEFAULT, pipe.from_environment, 5)
    assert inside.ok
    assert piped.ok
    assert (piped.schedules, piped.steps) == (inside.schedules, inside.steps)
    assert piped.schedules > 100


def test_the_probes_pass_over_the_pipe(served: str) -> None:
    assert first_problems(pipe.from_environment, executor_config(DEFAULT)) == ("", [])


def test_a_simulation_campaign_over_the_pipe_is_the_same_as_in_process(served: str) -> None:
    inside = campaign(range(6), "chaos", reference)
    piped = campaign(range(6), "chaos", pipe.from_environment, served)
    assert inside.ok
    assert piped.ok
    assert piped.totals.calls == inside.totals.calls > 0
    assert piped.totals.double_runs == inside.totals.double_runs


def test_verify_counts_the_same_schedules_steps_and_seeds_over_the_pipe(
        served: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from atmostonce import verify

    monkeypatch.setattr(verify, "CONFORMANCE_DEPTH", 4)
    monkeypatch.setattr(verify, "SIMULATION_SEEDS", 4)
    figures = []
    for given in (["--executor", "atmostonce.executor:reference"], ["--executor-cmd", SERVED]):
        code = cli.main(["verify", "--layers", "conformance,simulation", "--json", *given])
        out = json.loads(capsys.readouterr().out)
        assert code == 0, out
        figures.append([{k: check[k] for k in ("schedules", "steps", "programs", "seeds",
                                                "calls") if k in check}
                        for check in out["checks"]])
    assert figures[0] == figures[1]
    assert figures[0][0]["schedules"] > 0
    assert figures[0][2]["seeds"] == 4


def _verify(command: str, *more: str, layers: str = "conformance",
            tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp)} if tmp is not None else None
    return subprocess.run(
        [sys.executable, "-m", "atmostonce", "verify", "--layers", layers,
         "--executor-cmd", command, *more],
        capture_output=True, text=True, timeout=240, cwd=ROOT, env=env)


@pytest.mark.parametrize(("how", "says"), [
    ("exit", "exited with status 3"),
    ("hang", "gave no reply within 1 s (the timeout per reply)"),
    ("garbage", "wrote a line that is not JSON: 'this is not a protocol line'"),
    ("wrong", "answered handle(SetPolicy("),
    ("bad-command", "has type 'LaunchMissiles', which is no command"),
    ("raise", "raised ExecutorRaised: KeyError: 'calls' (at x.py:1)"),
    ("refuse-hello", "refused the handshake: this child speaks protocol 99"),
])
def test_a_misbehaving_child_is_the_executors_finding(how: str, says: str,
                                                      tmp_path: Path) -> None:
    command = f"{shlex.quote(sys.executable)} {CHILDREN / 'behaves.py'} {how}"
    done = _verify(command, "--executor-timeout", "1", tmp=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert sum(line.startswith("  [FAIL] conformance") for line in lines) == 2, done.stdout
    assert says in done.stdout
    assert lines[0].startswith("atmostonce verify: --executor-cmd ")
    assert f"--executor {pipe.PATH}" not in done.stdout, "a replay command must be runnable"
    kept = re.search(r"its stderr is kept in (\S+\.stderr)", done.stdout)
    if how == "raise":
        assert kept is None, "an exception the executor reports is no failure of its child"
        return
    assert kept is not None, done.stdout
    stderr = Path(kept.group(1))
    assert stderr.exists()
    assert stderr.parent == tmp_path
    if how == "exit":
        assert "the child gives up here" in stderr.read_text()
        assert "(its last words: the child gives up here" in done.stdout, "the reason on screen"


def test_a_hung_child_costs_one_timeout_and_every_layer_still_runs(tmp_path: Path) -> None:
    """Waiting for a hung child again for each of the 300 seeds would take 300 timeouts, far
    past the run's own timeout."""
    command = f"{shlex.quote(sys.executable)} {CHILDREN / 'behaves.py'} hang"
    done = _verify(command, "--executor-timeout", "2", layers="conformance,simulation",
                   tmp=tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert sum(line.startswith("  [FAIL] ") for line in lines) == 3, done.stdout
    assert "300 failing seeds" in done.stdout


@pytest.mark.parametrize(("command", "says"), [
    ("/no/such/executor --flag", "cannot be started: No such file or directory"),
    ("", "--executor-cmd is empty"),
    ("node 'unclosed", "No closing quotation"),
])
def test_a_command_that_cannot_start_is_bad_input(command: str, says: str) -> None:
    done = _verify(command)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert says in done.stderr


def test_executor_and_executor_cmd_together_is_bad_input() -> None:
    done = _verify(SERVED, "--executor", "atmostonce.executor:reference")
    assert done.returncode == 2
    assert "give --executor or --executor-cmd, not both" in done.stderr



def test_a_remembered_reply_gives_what_decoding_it_again_gives(served: str) -> None:
    """Reply lines are decoded once and remembered; each caller still gets its own list and
    its own copy of every persisted entry, so what one harness does to the entries it got
    changes nothing another gets."""
    from atmostonce.spec.protocol import JSON, Command, ExecutorConfig, OpenSession, Persist

    def entries(commands: list[Command]) -> list[dict[str, JSON]]:
        return [c.entry for c in commands if isinstance(c, Persist)]

    event = OpenSession(0.0, "s1", None)
    got = pipe.from_environment(ExecutorConfig()).handle(event)
    assert [e["session_id"] for e in entries(got)] == ["s1"]
    for entry in entries(got):
        entry["session_id"] = "changed"
    got.clear()
    again = pipe.from_environment(ExecutorConfig()).handle(event)
    assert [e["session_id"] for e in entries(again)] == ["s1"]
