"""verify's conformance layer judges how an executor takes workers' messages and ends abandoned
runs: a worker's messages about an attempt another holds change nothing, the holder's own (its
name equal, not the same object) go on, and the fence counts exactly the runs that may still go,
before and after a restart (TC-AMO-1, TC-AMO-3, TC-REC-1, D-6, D-8, D-9, D-12)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from atmostonce import verify
from atmostonce.check.probes.workers import probe_workers, wire
from atmostonce.executor import reference
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.state import Attempt, ExecutorState
from atmostonce.spec.protocol import (
    Command,
    Connected,
    ExecutorConfig,
    Finished,
    Persist,
    Started,
)


class TakesAnyWorkersStarted(ReferenceExecutor):
    """Takes a Started from any worker as the holder's (workers.py's `==` made `<=`)."""

    def on_started(self, event: Started) -> list[Command]:
        attempt = self.state.live.get(event.attempt)
        if attempt is not None and attempt.worker is not None:
            event = replace(event, worker=attempt.worker)
        return super().on_started(event)


class TakesAnyWorkersFinished(ReferenceExecutor):
    """Ends the attempt on a Finished from any worker."""

    def on_finished(self, event: Finished) -> list[Command]:
        attempt = self.state.live.get(event.attempt)
        if attempt is not None and attempt.worker is not None:
            event = replace(event, worker=attempt.worker)
        return super().on_finished(event)


class KnowsWorkersByIdentity(ReferenceExecutor):
    """Takes a worker's name for the holder's only when it is the very same object."""

    def on_started(self, event: Started) -> list[Command]:
        attempt = self.state.live.get(event.attempt)
        if attempt is not None and attempt.worker is not event.worker:
            out: list[Command] = []
            self.touch(event.worker, out)
            return out
        return super().on_started(event)


class EndsRunsOnAnyWord(ReferenceExecutor):
    """Takes a late Finished from any worker as the end of the abandoned run."""

    def late_finished(self, event: Finished, out: list[Command]) -> None:
        found = self.state.abandoned.get(event.attempt)
        super().late_finished(replace(event, worker=found[0]) if found else event, out)


class ForgetsLateFinishedInJournal(ReferenceExecutor):
    """Ends the run on a late Finished but does not journal it."""

    def late_finished(self, event: Finished, out: list[Command]) -> None:
        self.state.run_over(event.attempt, event.worker)


class ForgetsLostWorkersInJournal(ReferenceExecutor):
    """Ends a lost worker's runs but does not journal it."""

    def declare_lost(self, name: str, at: float, out: list[Command]) -> None:
        mine: list[Command] = []
        super().declare_lost(name, at, mine)
        out.extend(c for c in mine
                   if not (isinstance(c, Persist) and c.entry.get("type") == "worker_lost"))


class KeepsUnlistedRuns(ReferenceExecutor):
    """Takes a reconnecting worker as still running every abandoned run it had."""

    def on_connected(self, event: Connected) -> list[Command]:
        runs = tuple(self.state.abandoned_at.get(event.worker, ()))
        return super().on_connected(replace(event, running=event.running + runs))


class CountsListedReads(ReferenceExecutor):
    """Counts the run of a read its reconnecting worker lists, as if it were single-attempt."""

    def on_connected(self, event: Connected) -> list[Command]:
        worker = self.state.workers.get(event.worker)
        held = worker.holding if worker is not None else None
        if held is None or held.id not in event.running or self.single(held.call):
            return super().on_connected(event)
        out: list[Command] = []
        self.touch(event.worker, out)
        self.lose_attempt(held, event.at, out, may_go_on=True)
        return out


class GivesUpOnRunsOfLostWorkers(ReferenceExecutor):
    """Journals the attempt of a worker declared lost as possibly still running, then ends that
    run in the same step (workers.py's `may_go_on=False` made True)."""

    losing = False

    def declare_lost(self, name: str, at: float, out: list[Command]) -> None:
        self.losing = True
        try:
            super().declare_lost(name, at, out)
        finally:
            self.losing = False

    def lose_attempt(self, attempt: Attempt, at: float, out: list[Command],
                     may_go_on: bool) -> None:
        super().lose_attempt(attempt, at, out, may_go_on or self.losing)


class _XorState(ExecutorState):
    def run_over(self, attempt: str, worker: str) -> bool:
        found = self.abandoned.get(attempt)
        before = self.abandoned_of_tool.get(found[1], 0) if found else 0
        if not super().run_over(attempt, worker):
            return False
        assert found is not None
        self.abandoned_of_tool.pop(found[1], None)
        if before ^ 1:
            self.abandoned_of_tool[found[1]] = before ^ 1
        return True


class _ForgetsOtherRunsAtWorker(ExecutorState):
    def run_over(self, attempt: str, worker: str) -> bool:
        over = super().run_over(attempt, worker)
        self.abandoned_at.pop(worker, None)
        return over


class _KeepsRunsOfLostWorkers(ExecutorState):
    def runs_over_at(self, worker: str) -> bool:
        return bool(self.abandoned_at.get(worker))


class _WithState(ReferenceExecutor):
    """The reference executor keeping its tables in `STATE`."""

    STATE: type[ExecutorState] = ExecutorState

    def __init__(self, config: ExecutorConfig) -> None:
        super().__init__(config)
        self.state = self.STATE()


class CountsDownByXor(_WithState):
    """Counts a tool's abandoned runs down with `^ 1` (state.py's `- 1` made `^ 1`)."""

    STATE = _XorState


class ForgetsOtherRunsAtWorker(_WithState):
    """Forgets a worker's other abandoned runs when one is over."""

    STATE = _ForgetsOtherRunsAtWorker


class KeepsRunsOfLostWorkers(_WithState):
    """Keeps counting the abandoned runs of a worker declared lost."""

    STATE = _KeepsRunsOfLostWorkers


def test_a_name_off_the_wire_is_equal_but_never_the_same_object() -> None:
    name = "w" + str(1)
    assert wire(name) == name
    assert wire(name) is not name
    assert wire(name) is not wire(name)


@pytest.mark.clause("TC-AMO-1", "TC-REC-1", "D-6", "D-9")
def test_the_reference_takes_workers_messages_and_abandoned_runs_as_the_spec_says() -> None:
    start = time.perf_counter()
    assert probe_workers(reference, ExecutorConfig()) == []
    assert time.perf_counter() - start < 1.0


@pytest.mark.clause("TC-AMO-1", "TC-AMO-3", "TC-REC-1", "D-6", "D-8", "D-9", "D-12")
@pytest.mark.parametrize(("broken", "said"), [
    (TakesAnyWorkersStarted, "D-9: a Started from wa about attempt"),
    (TakesAnyWorkersFinished, "TC-REC-1: a Finished from wa about attempt"),
    (KnowsWorkersByIdentity, "D-9: the Started of wb, the worker holding attempt"),
    (EndsRunsOnAnyWord, "which only wb ran, a new call of fenced_write went ahead"),
    (ForgetsLateFinishedInJournal, "after a restart on the journal so far, wb's late Finished"),
    (ForgetsLostWorkersInJournal, "after a restart on the journal so far, we was declared lost"),
    (KeepsUnlistedRuns, "reconnected without listing"),
    (CountsListedReads, "turns_to_write became a non_idempotent_write, a new call of "
                        "turns_to_write was held back"),
    (GivesUpOnRunsOfLostWorkers, "while the heartbeat timeout of wk, which held"),
    (CountsDownByXor, "wd reconnected without listing"),
    (ForgetsOtherRunsAtWorker, "we was declared lost by its heartbeat timeout, a new call of "
                               "second_write was held back"),
    (KeepsRunsOfLostWorkers, "we was declared lost by its heartbeat timeout, a new call of "
                             "second_write was held back"),
])
def test_an_executor_that_mistakes_whose_message_or_which_runs_are_over_is_caught(
        broken: type[ReferenceExecutor], said: str) -> None:
    [problem] = probe_workers(broken, ExecutorConfig())
    assert said in problem
    assert problem.split(":")[0] in {"D-6", "D-9", "TC-REC-1", "TC-AMO-1"}


def test_verify_conformance_fails_an_executor_that_takes_a_foreign_finished(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "CONFORMANCE_DEPTH", 3)
    result = verify.check_conformance("takes_any_workers_finished", TakesAnyWorkersFinished)
    assert not result.ok
    assert "TAKES WORKERS' MESSAGES OR ABANDONED RUNS OTHERWISE THAN THE SPEC" in result.summary
