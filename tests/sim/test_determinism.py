"""One seed decides everything: the same seed gives the same history, and the workload comes
from its own stream, so the fault schedule can change (or shrink) under the same workload."""

from __future__ import annotations

import gc
import random

from atmostonce.check.history.entries import describe
from atmostonce.executor import reference
from atmostonce.sim.engine import scenario
from atmostonce.sim.faults import PROFILES, profile, schedule, swarm
from atmostonce.sim.run import run_seed
from atmostonce.sim.workload import executor_config


def _events(seed: int, name: str) -> list[str]:
    run = run_seed(seed, name, reference, keep_history=True)
    assert run.history is not None
    return [describe(e) for e in run.history.entries]


def test_the_same_seed_gives_the_same_history() -> None:
    for name in ("chaos", "restarts"):
        first = _events(11, name)
        assert first == _events(11, name)
        assert len(first) > 100


def test_different_seeds_give_different_histories() -> None:
    assert _events(1, "chaos") != _events(2, "chaos")


def test_the_workload_does_not_depend_on_the_fault_schedule() -> None:
    for seed in range(5):
        base = scenario(seed, profile("none"))
        for name in PROFILES:
            full = scenario(seed, profile(name))
            assert full.workload == base.workload
            assert scenario(seed, profile(name), only=()).faults == ()
            assert scenario(seed, profile(name), only=()).workload == base.workload


def test_each_seed_enables_a_nonempty_subset_of_its_profiles_fault_kinds() -> None:
    chaos = profile("chaos")
    seen: set[frozenset[str]] = set()
    for seed in range(40):
        kinds = swarm(chaos, random.Random(seed))
        assert kinds
        assert set(kinds) <= set(chaos.kinds)
        seen.add(frozenset(k.value for k in kinds))
    assert len(seen) > 10
    assert swarm(profile("none"), random.Random(0)) == ()


def test_a_schedule_stays_in_its_window_and_in_time_order() -> None:
    config = executor_config(False)
    for seed in range(20):
        kinds, faults = schedule(profile("chaos"), random.Random(seed), 30.0, 3, config)
        assert [f.at for f in faults] == sorted(f.at for f in faults)
        assert all(0 < f.at <= 30.0 and f.kind in kinds for f in faults)


def test_a_run_leaves_garbage_collection_as_it_found_it() -> None:
    """A run pauses automatic collection while it goes and collects after; it must hand the
    process back as it was, and stay out of the way of a caller that turned collection off."""
    assert gc.isenabled()
    assert run_seed(3, "chaos", reference).ok
    assert gc.isenabled()
    gc.disable()
    try:
        assert run_seed(3, "chaos", reference).ok
        assert not gc.isenabled()
    finally:
        gc.enable()
