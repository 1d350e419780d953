"""verify's conformance layer restarts an executor after calls reached every record kind and
refuses one that then shows any of them, or the session history, otherwise (TC-REC-1,
TC-REC-2, D-8): the model's schedules restart it only while a call is in flight."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from atmostonce import verify
from atmostonce.check.probes.restart import probe_restart
from atmostonce.executor import recovery, reference
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.views import tool_message
from atmostonce.spec.protocol import (
    JSON,
    Answer,
    Command,
    Event,
    ExecutorConfig,
    Finished,
    Poll,
    TimerFired,
)
from atmostonce.spec.session import AgentSnapshot, ToolCallStatus


@pytest.mark.clause("TC-REC-1", "TC-REC-2", "D-8")
def test_the_reference_executor_shows_every_record_and_message_as_before_a_restart() -> None:
    assert probe_restart(reference, ExecutorConfig()) == []


@pytest.mark.clause("TC-REC-2")
def test_a_restart_that_forgets_a_tool_result_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recovery, "tool_message",
                        lambda call, outcome, output: tool_message(call, outcome, ""))
    [problem] = probe_restart(reference, ExecutorConfig())
    assert problem.startswith("TC-REC-2: after a restart the session history")
    assert "found it" in problem


class ForgetsUserMessages(ReferenceExecutor):
    def recover(self, journal: Any, at: float) -> list[Command]:
        kept: list[dict[str, JSON]] = [e for e in journal if "Note from" not in str(e)]
        return super().recover(kept, at)


def test_a_restart_that_forgets_a_user_message_is_caught() -> None:
    [problem] = probe_restart(ForgetsUserMessages, ExecutorConfig())
    assert "holds 8 messages, before 9" in problem


class ForgetsErrors(ReferenceExecutor):
    def recover(self, journal: Any, at: float) -> list[Command]:
        commands = super().recover(journal, at)
        for call in self.state.calls.values():
            if call.outcome is not None and call.outcome.error.startswith("the tool may"):
                call.outcome = replace(call.outcome, error="the tool may have run")
        return commands


@pytest.mark.clause("TC-REC-1")
def test_a_restart_that_changes_a_record_is_caught() -> None:
    problems = probe_restart(ForgetsErrors, ExecutorConfig())
    assert problems[0].startswith("TC-REC-1: after a restart the failed call c5 (lookup) shows "
                                  "another error")


class ShowsNoRecord(ReferenceExecutor):
    def snapshot(self, session_id: str) -> AgentSnapshot:
        shown = super().snapshot(session_id)
        going = (ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.RUNNING)
        return replace(shown, tool_calls=tuple(v for v in shown.tool_calls if v.status in going))


def test_an_executor_that_shows_no_record_cannot_pass_by_showing_nothing() -> None:
    [problem] = probe_restart(ShowsNoRecord, ExecutorConfig())
    assert problem.startswith("the restart probe drove the calls only to awaiting_approval:")


class RecordsNothing(ReferenceExecutor):
    def handle(self, event: Event) -> list[Command]:
        ignored = isinstance(event, Finished | TimerFired | Answer)
        return [] if ignored else super().handle(event)


def test_an_executor_that_records_nothing_is_caught_by_the_first_rule_it_breaks() -> None:
    [problem] = probe_restart(RecordsNothing, ExecutorConfig())
    assert "was not cancelled there (A-CANCEL-ON-TIMEOUT" in problem


class HandsOutNothing(ReferenceExecutor):
    def handle(self, event: Event) -> list[Command]:
        return [] if isinstance(event, Poll) else super().handle(event)


def test_an_executor_the_probe_cannot_drive_is_told_so() -> None:
    [problem] = probe_restart(HandsOutNothing, ExecutorConfig())
    assert problem == ("D-8: the restart probe could not drive the executor's calls to their "
                       "records: worker w1 polled for a queued call and got no go-ahead")


def test_verify_conformance_fails_a_restart_that_forgets_a_tool_result(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "CONFORMANCE_DEPTH", 3)
    monkeypatch.setattr(recovery, "tool_message",
                        lambda call, outcome, output: tool_message(call, outcome, ""))
    result = verify.check_conformance("forgets", reference)
    assert not result.ok
    assert "A RESTART CHANGES WHAT THE SESSION SHOWS" in result.summary


class CountsTheDeadlineFromTheRestart(ReferenceExecutor):
    def resume(self, call: Any, at: float, out: list[Command]) -> None:
        call.asked_at = at
        super().resume(call, at, out)


@pytest.mark.clause("D-32")
def test_a_restart_that_gives_a_waiting_call_its_whole_deadline_again_is_caught() -> None:
    [problem] = probe_restart(CountsTheDeadlineFromTheRestart, ExecutorConfig())
    assert problem.startswith("D-32: after a restart the approval timer of ")
    assert "is due at 334, not 332" in problem
