"""verify's conformance layer replays the fence-off and fence-on schedules at once, in two
processes, when the executor's path loads its factory again; the results are exactly those of
replaying them one after the other, a failure in the other process comes back (a death as one
line), and a first configuration that fails leaves the second out, as it would one after the
other."""

from __future__ import annotations

import os

import pytest

from atmostonce.check.lockstep.conformance import ConformanceResult
from atmostonce.check.lockstep.parallel import _replay, replay_all
from atmostonce.executor import reference
from atmostonce.executor.mutants import EXECUTOR_MUTANTS
from atmostonce.model.check import DEFAULT
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import Executor, ExecutorConfig

CONFIGS = (DEFAULT, DEFAULT.with_(fence=True))


def _seen(results: list[ConformanceResult]) -> list[tuple[object, ...]]:
    return [(r.schedules, r.steps, r.diverged, r.disagreements, r.breaches) for r in results]


def wrong_with_the_fence(config: ExecutorConfig) -> Executor:
    """The reference with the fence off, a mutant that retries a write with it on."""
    return (EXECUTOR_MUTANTS["retry_non_idempotent"].factory if config.fence
            else reference)(config)


def dies_with_the_fence(config: ExecutorConfig) -> Executor:
    if config.fence:
        os._exit(3)
    return reference(config)


@pytest.mark.parametrize("name", ["reference", "wrong_with_the_fence"])
def test_replaying_at_once_finds_just_what_replaying_one_after_the_other_finds(
        name: str) -> None:
    factory = reference if name == "reference" else wrong_with_the_fence
    path = "atmostonce.executor:reference" if name == "reference" else f"{__name__}:{name}"
    heard: list[tuple[int, int]] = []
    at_once = replay_all(CONFIGS, path, factory, 5, lambda done, total: heard.append(
        (done, total)))
    one_by_one = replay_all(CONFIGS, "no such path", factory, 5)
    assert _seen(at_once) == _seen(one_by_one)
    assert len(at_once) == 2
    assert [r.ok for r in at_once] == ([True, True] if name == "reference" else [True, False])
    if name == "reference":
        assert heard[-1] == (sum(r.schedules for r in at_once),) * 2


def test_a_child_that_dies_is_one_line_naming_it() -> None:
    with pytest.raises(SpecError, match="died \\(exit 3\\)"):
        replay_all(CONFIGS, f"{__name__}:dies_with_the_fence", dies_with_the_fence, 4)


def test_a_childs_own_failure_goes_back_to_the_parent() -> None:
    sent: list[tuple[str, object]] = []

    class Send:
        def send(self, message: tuple[str, object]) -> None:
            sent.append(message)

        def close(self) -> None:
            pass

    _replay(DEFAULT, "nope:x", 4, [0, 0], Send())
    [(kind, error)] = sent
    assert kind == "error"
    assert isinstance(error, SpecError)
    assert "cannot import executor module 'nope'" in str(error)


def test_a_first_configuration_that_fails_leaves_the_second_out() -> None:
    mutant = EXECUTOR_MUTANTS["retry_non_idempotent"]
    results = replay_all(CONFIGS, "atmostonce.executor.mutants:retry_non_idempotent",
                         mutant.factory, 9)
    assert len(results) == 1
    assert not results[0].ok
