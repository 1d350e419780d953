"""`atmostonce verify --executor atmostonce.executor.mutants:NAME` exits 1 for every mutant, with
the disagreement and the schedule that shows it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from atmostonce import verify
from atmostonce.check.executors.loading import load_factory
from atmostonce.check.lockstep.deep import DEEP_EXAMPLES
from atmostonce.executor import reference
from atmostonce.executor.mutants import EXECUTOR_MUTANTS, ExecutorMutant
from tests.load import patience

SEEN_FROM_OUTSIDE = {
    "heartbeat_not_heard": "the lockstep fires a worker's heartbeat timeout when the model "
    "detects its loss and never when a heartbeat came in time, so a heartbeat that renews "
    "nothing changes no step; the simulation and the runtime chaos judge liveness by the clock "
    "(tests/sim/test_heard_keeps_attempt.py, tests/chaos/test_mutants.py)",
}
"""Mutants only the layers that keep time can catch."""


NOT_YET_IN_CONFORMANCE = {
    "ask_deadline_ignored": "no conformance schedule or probe sends an ask that sets its own "
    "approval deadline (D-32), so the layer passes it (verify --layers conformance, 0 "
    "disagreements); the simulation catches it (tests/sim/test_shapes.py)",
}
"""Mutants of a shape the conformance layer does not drive yet: a blind spot, named."""

LONG = {
    "fence_ignored": "tests/check/lockstep/test_schedule_replay.py (its schedule at depth 7)",
    "cancel_records_failed_ignored": "tests/check/lockstep/test_schedule_replay.py",
    "attempts_capped_at_two": "test_the_deep_lockstep_check_shows_its_figures_and_a_pasteable"
                              "_program below",
    "record_overwritten": "tests/sim/test_mutants.py (the simulation layer)",
}
"""Mutants whose whole conformance layer takes minutes (3 to 7 on 2 busy cores), run only with
`-m long`; each is caught in the default run by the shorter test named."""


@pytest.mark.clause("TC-EFF-NONIDEM", "TC-AMO-1", "TC-REC-NOTRUN", "TC-APR-2", "TC-SNAP-1",
                    "TC-REC-1", "TC-KEY-1", "D-6", "D-5", "TC-RCN-1", "D-4", "D-7", "D-8")
@pytest.mark.parametrize("mutant", [
    pytest.param(m, marks=pytest.mark.long) if m.name in LONG else m
    for m in EXECUTOR_MUTANTS.values()], ids=lambda m: m.name)
def test_verify_exits_1_for_the_executor_mutant(mutant: ExecutorMutant) -> None:
    if mutant.name in SEEN_FROM_OUTSIDE:
        pytest.skip(SEEN_FROM_OUTSIDE[mutant.name])
    if mutant.name in NOT_YET_IN_CONFORMANCE:
        pytest.skip(NOT_YET_IN_CONFORMANCE[mutant.name])
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "verify", "--layers", "conformance",
         "--executor", f"atmostonce.executor.mutants:{mutant.name}"],
        capture_output=True, text=True, check=False, timeout=300 * patience())
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DISAGREES" in done.stdout
    assert "schedule:" in done.stdout or "shortest program" in done.stdout


@pytest.mark.clause("TC-REC-RETRY")
def test_the_deep_lockstep_check_shows_its_figures_and_a_pasteable_program() -> None:
    """verify's deep stage on a retry cap of two (which passes every schedule within the
    exhaustive depth, two attempts; the probe of a long-retried call catches it too) fails
    with its program, seed and replay command, and its JSON carries the figures."""
    path = "atmostonce.executor.mutants:attempts_capped_at_two"
    planned = [c for c in verify.plan(path, load_factory(path), ("conformance",), seed=3)
               if c.name == "deep lockstep"]
    (result,) = verify.run(planned)
    deep = json.loads(json.dumps(result.as_json()))
    assert not deep["ok"]
    assert "DISAGREES" in result.summary
    assert "seed 3" in result.summary
    assert deep["seed"] == 3
    assert deep["programs"] > 0
    assert deep["steps"] > 0
    assert deep["program"][0][0] == "ask"
    assert f"replay({path!r}, [" in result.details[1]
    assert result.details[2] == f"replay: atmostonce verify --executor {path} --layers " \
        "conformance --seed 3"
    (ok,) = verify.run([c for c in verify.plan("atmostonce.executor:reference",
                                              reference, ("conformance",), seed=3)
                        if c.name == "deep lockstep"])
    assert ok.ok, ok.details
    programs = ok.data["programs"]
    assert isinstance(programs, int)
    assert programs >= DEEP_EXAMPLES


def test_verify_help_names_the_deep_stage_and_a_bad_seed_exits_2() -> None:
    shown = subprocess.run([sys.executable, "-m", "atmostonce", "verify", "--help"],
                           capture_output=True, text=True, check=True, timeout=60 * patience())
    assert "deep lockstep" in " ".join(shown.stdout.split())
    done = subprocess.run([sys.executable, "-m", "atmostonce", "verify", "--seed", "-1"],
                          capture_output=True, text=True, check=False, timeout=60 * patience())
    assert done.returncode == 2
    assert "expected a seed >= 0" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(("path", "message"), [
    ("nope:x", "cannot import executor module 'nope'"),
    ("atmostonce.executor:nothing", "has no attribute 'nothing'"),
    ("not a path", "malformed executor path"),
    ("atmostonce.spec.keys:build_key", "failed to build an executor"),
])
def test_verify_rejects_a_bad_executor_path_with_exit_2(path: str, message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "atmostonce", "verify", "--executor", path],
                          capture_output=True, text=True, check=False, timeout=60 * patience())
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stderr.count("\n") == 1
