"""An executor that raises, or answers outside the protocol, is a failure of its own seed,
reported with the call that broke it and the command that replays it; the campaign goes on, and
the schedule shrinks to the faults that make it fail."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from atmostonce.check.executors.loading import load_factory
from atmostonce.executor import reference
from atmostonce.sim.campaign import campaign
from atmostonce.sim.run import run_seed
from atmostonce.sim.shrink import ERROR, shrink
from atmostonce.spec.protocol import JSON, Command, Event, Executor, ExecutorConfig
from atmostonce.spec.session import AgentSnapshot
from tests.check.executors.broken_executors import BROKEN, path

PATH = "tests.sim.test_broken_executors:fails_after_restart"


class _FailsAfterRestart:
    """The reference, except that it cannot handle a Poll once it has recovered."""

    def __init__(self, config: ExecutorConfig) -> None:
        self.inner = reference(config)
        self.recovered = False

    def handle(self, event: Event) -> list[Command]:
        if self.recovered and type(event).__name__ == "Poll":
            raise RuntimeError("lost track of the worker table")
        return self.inner.handle(event)

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        self.recovered = True
        return self.inner.recover(journal, at)

    def snapshot(self, session_id: str) -> AgentSnapshot:
        return self.inner.snapshot(session_id)


def fails_after_restart(config: ExecutorConfig) -> Executor:
    return _FailsAfterRestart(config)


def test_an_executor_that_raises_fails_its_seed_with_the_error_and_a_replay() -> None:
    factory = load_factory(PATH)
    assert run_seed(0, "none", factory, PATH).ok
    result = campaign(range(6), "restarts", factory, PATH, shrink_first=1)
    assert not result.ok
    failure = result.failures[0]
    assert failure.run.error is not None
    assert "RuntimeError: lost track of the worker table" in failure.run.error
    assert failure.run.replay_command().endswith(f"--executor {PATH}")
    assert len(result.seeds) == 6
    assert failure.shrunk is not None
    assert failure.shrunk.property == ERROR
    assert len(failure.shrunk.kept) == 1


def test_a_run_that_raises_can_be_shrunk_directly() -> None:
    for seed in range(10):
        run = run_seed(seed, "restarts", fails_after_restart, PATH)
        if run.error is not None and len(run.scenario.faults) > 1:
            shrunk = shrink(run, fails_after_restart)
            assert len(shrunk.kept) == 1
            assert shrunk.result.error is not None
            return
    raise AssertionError("no restarts seed with several faults makes it raise")


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_an_executor_outside_the_protocol_fails_its_seed_with_the_breach_and_a_replay(
        name: str) -> None:
    """Every way of stepping outside the protocol (raising, a tuple or None for a list, a
    string among the commands, a field of the wrong type, a snapshot of the wrong shape) fails
    the seed with one line naming the call and the problem, the campaign goes on, the replay
    command reproduces it, and the schedule shrinks to the faults it needs."""
    factory, words = BROKEN[name]
    result = campaign(range(6), "restarts", factory, path(name), shrink_first=1)
    assert len(result.seeds) == 6
    failure = result.failures[0]
    error = failure.run.error
    assert error is not None
    assert all(word in error for word in words), error
    assert "\n" not in error
    assert failure.run.replay_command().endswith(f"--executor {path(name)}")
    again = run_seed(failure.run.seed, "restarts", factory, path(name))
    assert again.error == error
    assert failure.shrunk is not None
    assert failure.shrunk.property == ERROR
    assert failure.shrunk.result.error is not None
