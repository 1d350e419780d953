"""verify's conformance layer cuts an executor's journal right after each entry, recovers a
fresh executor from every prefix and drives it to quiescence, and refuses one that then leaves
a call without a record, changes a record kept or decided before the cut, starts a waiting
call's approval timer at the wrong time, forgets that a session keeps its default as a floor
or never declares lost a worker that held a fenced run (D-3, D-6, D-8, D-12, D-22, D-32,
TC-REC-1)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import pytest

from atmostonce.check.probes.crashes import probe_crashes
from atmostonce.check.probes.table import first_problems
from atmostonce.executor import reference
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.state import Call
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.protocol import (
    JSON,
    Command,
    Event,
    ExecutorConfig,
    Persist,
    StartTimer,
    TimerKind,
)
from atmostonce.spec.records import Outcome


@pytest.mark.clause("D-8", "TC-REC-1", "D-32", "D-22", "D-6")
def test_the_reference_executor_recovers_every_cut_of_its_journal() -> None:
    started = time.perf_counter()
    assert probe_crashes(reference, ExecutorConfig()) == []
    assert time.perf_counter() - started < 1.0


class OverdueTimerNegative(ReferenceExecutor):
    """Starts an overdue approval timer with a negative delay, as `at` past the deadline
    gives without the clamp."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        return [replace(c, delay=-1.0) if isinstance(c, StartTimer) and c.delay == 0
                and c.kind is TimerKind.APPROVAL_DEADLINE else c
                for c in super().recover(journal, at)]


class OverdueTimerLate(ReferenceExecutor):
    """Gives an overdue approval timer a second more."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        return [replace(c, delay=max(1.0, c.delay)) if isinstance(c, StartTimer)
                and c.kind is TimerKind.APPROVAL_DEADLINE else c
                for c in super().recover(journal, at)]


@pytest.mark.clause("D-32")
@pytest.mark.parametrize(("broken", "delay"),
                         [(OverdueTimerNegative, "-1"), (OverdueTimerLate, "1")])
def test_a_restart_past_the_deadline_must_start_the_approval_timer_at_once(
        broken: type[ReferenceExecutor], delay: str) -> None:
    problems = probe_crashes(broken, ExecutorConfig())
    assert problems[0].startswith("D-32: after a restart past the approval deadline")
    assert f"has the delay {delay}, not 0" in problems[0]


class ForgetsUnqueuedCalls(ReferenceExecutor):
    """Picks up no call that has no attempt yet after a restart."""

    def resume(self, call: Call, at: float, out: list[Command]) -> None:
        if call.attempts_made == 0 and call.approval in (ApprovalState.NOT_REQUIRED,
                                                          ApprovalState.APPROVED):
            return
        super().resume(call, at, out)


@pytest.mark.clause("D-8")
def test_a_call_asked_or_approved_but_not_yet_queued_must_be_queued_after_a_restart() -> None:
    shows_none, never_recorded = probe_crashes(ForgetsUnqueuedCalls, ExecutorConfig())
    assert shows_none.startswith("D-8: after a restart with the journal cut after entry 8 "
                                 "(entry 1 of 2 of the batch of Ask")
    assert "with no attempt yet, shows none after recover" in shows_none
    assert "never got a record" in never_recorded


class WaitsABackoffFirst(ReferenceExecutor):
    """After a restart, holds a call that has no attempt yet back for a retry backoff."""

    def resume(self, call: Call, at: float, out: list[Command]) -> None:
        if call.attempts_made == 0 and call.approval in (ApprovalState.NOT_REQUIRED,
                                                          ApprovalState.APPROVED):
            call.backoff = True
        super().resume(call, at, out)


@pytest.mark.clause("D-8")
def test_a_call_not_yet_queued_gets_its_first_attempt_at_once_after_a_restart() -> None:
    [problem] = probe_crashes(WaitsABackoffFirst, ExecutorConfig())
    assert "with no attempt yet, shows none after recover" in problem


def _without_detail(outcome: Outcome) -> Outcome:
    return replace(outcome, error=outcome.error.split(": ")[0])


class DropsTheToolsMessage(ReferenceExecutor):
    """Records a tool's own failure without the tool's message."""

    def finalize(self, call: Call, outcome: Outcome, output: str, at: float,
                 out: list[Command]) -> None:
        super().finalize(call, _without_detail(outcome), output, at, out)


@pytest.mark.clause("D-3")
def test_a_tool_failure_must_carry_the_tools_message() -> None:
    problems = probe_crashes(DropsTheToolsMessage, ExecutorConfig())
    assert problems[0] == ("D-3: the call crash-probe/t2/c2, whose tool reported the failure "
                           "'the service said no', recorded failed with the error 'the tool "
                           "reported a failure', without the tool's message")


class DecidesOtherwiseAfterACut(ReferenceExecutor):
    """Records a call whose end was durable, not its record, without the tool's message."""

    def resume(self, call: Call, at: float, out: list[Command]) -> None:
        if call.pending is not None:
            call.pending = _without_detail(call.pending)
        super().resume(call, at, out)


@pytest.mark.clause("D-3", "TC-REC-1")
def test_a_call_whose_end_was_durable_gets_the_uncut_record_after_a_restart() -> None:
    [problem] = probe_crashes(DecidesOtherwiseAfterACut, ExecutorConfig())
    assert problem.startswith("TC-REC-1: after a restart with the journal cut after entry 16 "
                              "(entry 1 of 2 of the batch of Finished at 16) the call "
                              "crash-probe/t2/c2, which was cut part-way through the batch "
                              "that recorded it, ends failed 'the tool reported a failure'")


class ForgetsTheFloor(ReferenceExecutor):
    """Journals every session as one whose hints may lower its default."""

    def handle(self, event: Event) -> list[Command]:
        return [Persist({k: v for k, v in c.entry.items() if k != "hints_may_lower"})
                if isinstance(c, Persist) else c for c in super().handle(event)]


@pytest.mark.clause("D-22")
def test_a_floored_session_keeps_its_floor_after_a_restart() -> None:
    [problem] = probe_crashes(ForgetsTheFloor, ExecutorConfig())
    assert problem.startswith("D-22: after a restart a call of hinted_lookup")
    assert "keeps the effect EffectClass.READ" in problem


class NoHeartbeatAfterRestart(ReferenceExecutor):
    """Starts no heartbeat timer in recover for the workers that may still run a run."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        return [c for c in super().recover(journal, at)
                if not (isinstance(c, StartTimer) and c.kind is TimerKind.HEARTBEAT_TIMEOUT)]


@pytest.mark.clause("D-6", "D-8", "D-12")
def test_a_worker_holding_a_fenced_run_that_never_comes_back_is_declared_lost() -> None:
    [problem] = probe_crashes(NoHeartbeatAfterRestart, ExecutorConfig())
    assert problem.startswith("D-12: with the fence on, after a restart the worker")


def test_verify_runs_the_crash_probe_on_fresh_executors() -> None:
    verdict, problems = first_problems(NoHeartbeatAfterRestart, ExecutorConfig())
    assert verdict == "A RESTART INSIDE A BATCH LOSES OR CHANGES A CALL"
    assert problems[0].startswith("D-12:")


class ForgetsRejections(ReferenceExecutor):
    """Shows a call whose rejection by a person was journalled as rejected by the deadline
    after a restart."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        commands = super().recover(journal, at)
        kept = {e["key"] for e in journal if e["type"] == "record"}
        for call in self.state.calls.values():
            if call.key in kept and call.outcome and "a person" in call.outcome.error:
                call.outcome = replace(call.outcome, error="rejected: the approval deadline "
                                       "passed before anyone answered")
        return commands


@pytest.mark.clause("TC-REC-1")
def test_a_record_persisted_before_the_cut_is_kept_after_a_restart() -> None:
    problems = probe_crashes(ForgetsRejections, ExecutorConfig())
    assert problems[0].startswith("TC-REC-1: after a restart with the journal cut after entry 31 "
                                  "(entry 2 of 2 of the batch of Answer at 25) the call "
                                  "crash-probe/t5/c5, which was recorded before the cut, ends "
                                  "rejected 'rejected: the approval deadline")
