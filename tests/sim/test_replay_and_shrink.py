"""A failure replays exactly from its seed, and its fault schedule shrinks by delta debugging
to a 1-minimal one that still breaks the same property under the same workload."""

from __future__ import annotations

from atmostonce.check.history.entries import describe
from atmostonce.executor.mutants import EXECUTOR_MUTANTS
from atmostonce.sim.run import RunResult, run_seed
from atmostonce.sim.shrink import ddmin, shrink

MUTANT = EXECUTOR_MUTANTS["restart_requeues_handed"]


def failing_run() -> RunResult:
    """The first chaos seed where the mutant fails with several faults in its schedule."""
    for seed in range(40):
        run = run_seed(seed, "chaos", MUTANT.factory, MUTANT.path, keep_history=True)
        if not run.ok and len(run.scenario.faults) >= 4:
            return run
    raise AssertionError("no chaos seed with several faults catches the mutant")


def test_replaying_a_seed_reproduces_its_failure_exactly() -> None:
    failed = failing_run()
    again = run_seed(failed.seed, "chaos", MUTANT.factory, MUTANT.path, keep_history=True)
    assert again.violations == failed.violations
    assert failed.history is not None
    assert again.history is not None
    assert [describe(e) for e in again.history.entries] == [
        describe(e) for e in failed.history.entries]
    assert failed.replay_command() == (
        f"atmostonce replay {failed.seed} --profile chaos --executor {MUTANT.path}")


def test_shrinking_yields_a_smaller_schedule_that_still_fails() -> None:
    failed = failing_run()
    shrunk = shrink(failed, MUTANT.factory)
    assert shrunk.property == failed.violations[0].property
    assert len(shrunk.kept) < len(failed.scenario.faults)
    assert any(v.property == shrunk.property for v in shrunk.result.violations)
    assert shrunk.result.scenario.workload == failed.scenario.workload
    assert f"--faults {','.join(map(str, shrunk.kept)) or 'none'}" in (
        shrunk.result.replay_command())
    for drop in shrunk.kept:
        fewer = tuple(i for i in shrunk.kept if i != drop)
        rerun = run_seed(failed.seed, "chaos", MUTANT.factory, MUTANT.path, fewer)
        assert all(v.property != shrunk.property for v in rerun.violations), (
            "every fault left in the shrunk schedule is needed")


def test_ddmin_finds_the_faults_that_matter() -> None:
    tested: list[tuple[int, ...]] = []

    def fails(subset: tuple[int, ...]) -> bool:
        tested.append(subset)
        return {3, 7} <= set(subset)

    kept, tests = ddmin(tuple(range(10)), fails)
    assert kept == (3, 7)
    assert tests == len(tested)
    assert ddmin((1, 2, 3), lambda subset: True) == ((), 1)
