"""The simulation catches every deliberately broken executor by the property it breaks (a
checking layer that passes a mutant is broken), within a few seeds of a fixed search order."""

from __future__ import annotations

import pytest

from atmostonce.executor import reference
from atmostonce.executor.mutants import EXECUTOR_MUTANTS, ExecutorMutant
from atmostonce.sim.run import RunResult, run_seed

SEARCH = tuple((profile, seed) for profile in ("chaos", "timeouts", "restarts")
               for seed in range(30))


def first_catch(mutant: ExecutorMutant) -> RunResult | None:
    for profile, seed in SEARCH:
        run = run_seed(seed, profile, mutant.factory, mutant.path, stop_on=mutant.expect)
        if any(v.property == mutant.expect for v in run.violations):
            return run
    return None


DECLARED_ELSEWHERE = {
    "cancel_records_failed_ignored": "it breaks only an executor that declares D-4's other "
    "choice, which no simulation profile declares; conformance's pass under that choice "
    "catches it (tests/check/lockstep/test_mutants_caught.py)",
}
"""Mutants that break only an option the simulation's profiles never declare."""


@pytest.mark.parametrize("name", sorted(EXECUTOR_MUTANTS))
def test_the_simulation_catches_the_executor_mutant(name: str) -> None:
    if name in DECLARED_ELSEWHERE:
        pytest.skip(DECLARED_ELSEWHERE[name])
    mutant = EXECUTOR_MUTANTS[name]
    caught = first_catch(mutant)
    assert caught is not None, f"{name} ({mutant.summary}) escaped the simulation"
    again = run_seed(caught.seed, caught.scenario.profile.name, reference)
    assert again.ok, "the reference passes the seed that catches the mutant"


def test_the_checks_run_online_and_can_stop_a_run_at_its_first_violation() -> None:
    mutant = EXECUTOR_MUTANTS["go_ahead_before_persist"]
    whole = run_seed(0, "chaos", mutant.factory, mutant.path)
    stopped = run_seed(0, "chaos", mutant.factory, mutant.path, stop_on="*")
    assert not whole.ok
    assert stopped.violations[0] == whole.violations[0]
    assert stopped.stats.events < whole.stats.events / 10
