"""The deep lockstep reaches what the exhaustive depth cannot (three attempts, two calls waiting,
restarts while a call waits, heartbeats), catches a mutant only those bounds tell apart, and
prints its shrunk program as a test that fails again when pasted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.check.lockstep.conformance import replay_schedules
from atmostonce.check.lockstep.deep import SHAPES, program_text, replay, run_deep
from atmostonce.check.lockstep.state import Disagreement
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.mutants import EXECUTOR_MUTANTS
from atmostonce.model.check import DEFAULT
from atmostonce.spec.protocol import Command, Executor, ExecutorConfig, Heartbeat
from tests.load import patience

CAPPED = EXECUTOR_MUTANTS["attempts_capped_at_two"]


@pytest.mark.clause("TC-REC-RETRY", "TC-REC-1", "D-8", "D-12")
def test_the_reference_agrees_and_the_programs_reach_every_deep_shape() -> None:
    # verify's own budget: since the model's bound restarts while a call waits, 60 programs
    # at seed 0 reach no third attempt (300 reach 12)
    result = run_deep("atmostonce.executor:reference", 0, examples=300)
    assert result.failure is None, result.failure
    assert result.programs >= 300
    assert result.steps > 5 * result.programs
    assert all(result.reached[shape] > 0 for shape in SHAPES), result.reached


@pytest.mark.clause("TC-REC-RETRY")
def test_a_retry_cap_of_two_passes_the_exhaustive_depth_and_fails_the_deep_stage() -> None:
    shallow = replay_schedules(DEFAULT.with_(faults=1), CAPPED.factory, depth=6)
    assert shallow.ok
    assert shallow.schedules > 100
    deep = run_deep(CAPPED.path, 0)
    assert deep.failure is not None
    assert not deep.failure.breach
    assert "running in the model" in str(deep.failure)
    program = deep.failure.program
    with pytest.raises(Disagreement):
        replay(CAPPED.path, program)
    replay(CAPPED.path, program[:-1])
    replay("atmostonce.executor:reference", program)


def test_the_shrunk_program_pasted_into_a_test_fails_again(tmp_path: Path) -> None:
    failure = run_deep(CAPPED.path, 1).failure
    assert failure is not None
    pasted = tmp_path / "test_pasted.py"
    pasted.write_text(program_text(CAPPED.path, failure.program) + "\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(pasted)], capture_output=True, text=True, check=False,
                          cwd=tmp_path, timeout=120 * patience())
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout
    assert str(failure).splitlines()[0] in done.stdout


class _HeartbeatIgnored(ReferenceExecutor):
    def on_heartbeat(self, event: Heartbeat) -> list[Command]:
        return []


def _heartbeat_ignored(config: ExecutorConfig) -> Executor:
    return _HeartbeatIgnored(config)


@pytest.mark.clause("D-12")
def test_a_heartbeat_that_does_not_restart_the_heartbeat_timeout_is_caught() -> None:
    result = run_deep(_heartbeat_ignored, 0, examples=100)
    assert result.failure is not None
    assert "did not restart its heartbeat timeout" in str(result.failure)
    assert result.failure.program[-1][0] == "renew"
    note = "".join(getattr(result.failure, "__notes__", []))
    assert "test_deep:_heartbeat_ignored" in note
