"""verify's conformance schedules fanned out over worker processes (`--processes`) give just
what replaying them one after the other gives: the same counts, the same first failure, the
later configurations left out after it; a worker that dies is one line."""

from __future__ import annotations

import pytest

from atmostonce.check.lockstep.conformance import ConformanceResult
from atmostonce.check.lockstep.parallel import replay_all
from atmostonce.executor import reference
from atmostonce.executor.mutants import EXECUTOR_MUTANTS
from atmostonce.fanout.way import way
from atmostonce.model.check import DEFAULT
from atmostonce.spec.errors import SpecError
from tests.check.lockstep.test_parallel_replay import dies_with_the_fence, wrong_with_the_fence

CONFIGS = (DEFAULT, DEFAULT.with_(fence=True), DEFAULT.with_(cancel_records_failed=True))
WRONG = "tests.check.lockstep.test_parallel_replay:wrong_with_the_fence"


def _seen(results: list[ConformanceResult]) -> list[tuple[object, ...]]:
    return [(r.schedules, r.steps, r.diverged, r.disagreements, r.breaches) for r in results]


def test_fanned_out_the_reference_replays_every_schedule_as_one_by_one() -> None:
    heard: list[tuple[int, int]] = []
    fanned = replay_all(CONFIGS, "atmostonce.executor:reference", reference, 3,
                        lambda done, total: heard.append((done, total)), way(2))
    one_by_one = replay_all(CONFIGS, "no such path", reference, 3)
    assert _seen(fanned) == _seen(one_by_one)
    assert [r.ok for r in fanned] == [True, True, True]
    assert heard[0] == (0, heard[-1][1])
    assert heard[-1] == (sum(r.schedules for r in fanned),) * 2


def test_fanned_out_a_failure_in_the_second_configuration_is_the_one_by_one_failure() -> None:
    fanned = replay_all(CONFIGS, WRONG, wrong_with_the_fence, 4, None, way(2))
    one_by_one = replay_all(CONFIGS, "no such path", wrong_with_the_fence, 4)
    assert _seen(fanned) == _seen(one_by_one)
    assert [r.ok for r in fanned] == [True, False]


def test_fanned_out_a_first_configuration_that_fails_leaves_the_others_out() -> None:
    mutant = EXECUTOR_MUTANTS["retry_non_idempotent"]
    path = "atmostonce.executor.mutants:retry_non_idempotent"
    fanned = replay_all(CONFIGS, path, mutant.factory, 4, None, way(2))
    assert _seen(fanned) == _seen(replay_all(CONFIGS, "no such path", mutant.factory, 4))
    assert len(fanned) == 1
    assert not fanned[0].ok


def test_a_worker_that_dies_is_one_line_naming_it() -> None:
    with pytest.raises(SpecError, match="a worker process died while running piece"):
        replay_all(CONFIGS, "tests.check.lockstep.test_parallel_replay:dies_with_the_fence",
                   dies_with_the_fence, 3, None, way(2))
