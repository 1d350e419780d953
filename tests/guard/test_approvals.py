"""The guard's approvals: asked once, decided once by D-7's table, with a deadline on the
guard's clock; a decision kept in the journal, so a process that resumes after a crash neither
asks again nor runs an approved single-attempt write a second time."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from atmostonce.guard import Attempt, Finished, Guard, Statement, UnknownCall, Waiting
from atmostonce.spec.approval import ApprovalReply, ApprovalState
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.records import Record, RejectReason, reject_text
from tests.guard.conftest import Children, Clock, effects

KEY = "s/t1/c1"
GATED = Statement(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE), deadline=60.0)


def gated(tmp_path: Path, clock: Clock) -> tuple[Guard, list[int]]:
    """A guard with one call waiting for approval, and the runs of its tool."""
    guard = Guard(tmp_path / "guard.db", clock=clock)
    guard.ask(KEY, "cancel_order", "{}", GATED)
    return guard, []


def run(guard: Guard, runs: list[int]) -> Finished | Waiting:
    async def tool(attempt: Attempt) -> str:
        runs.append(attempt.number)
        return "cancelled"
    return asyncio.run(guard.run(KEY, tool))


@pytest.mark.clause("TC-APR-2", "D-7")
def test_a_call_waits_until_approved_and_then_runs_once(tmp_path: Path) -> None:
    clock = Clock()
    guard, runs = gated(tmp_path, clock)
    assert run(guard, runs) == Waiting(KEY, clock.now + 60.0)
    assert runs == []
    assert guard.answer(KEY, approve=True) is ApprovalReply.ACCEPTED
    result = run(guard, runs)
    assert isinstance(result, Finished)
    assert (result.outcome.record, runs) == (Record.SUCCEEDED, [1])


@pytest.mark.clause("D-7")
@pytest.mark.parametrize(("first", "second", "reply"), [
    (True, True, ApprovalReply.ALREADY_APPROVED),
    (True, False, ApprovalReply.ALREADY_APPROVED),
    (False, True, ApprovalReply.ALREADY_REJECTED),
    (False, False, ApprovalReply.ALREADY_REJECTED)])
def test_a_second_answer_is_refused_and_changes_nothing(tmp_path: Path, first: bool,
                                                       second: bool,
                                                       reply: ApprovalReply) -> None:
    guard, _ = gated(tmp_path, Clock())
    assert guard.answer(KEY, first) is ApprovalReply.ACCEPTED
    assert Guard(tmp_path / "guard.db").answer(KEY, second) is reply
    assert guard.approval(KEY) is (ApprovalState.APPROVED if first else ApprovalState.REJECTED)


@pytest.mark.clause("TC-REC-REJ", "D-7", "D-32")
def test_a_deadline_that_passed_rejects_the_call_and_refuses_a_late_answer(
        tmp_path: Path) -> None:
    clock = Clock()
    guard, runs = gated(tmp_path, clock)
    clock.now += 59.9
    assert guard.approval(KEY) is ApprovalState.WAITING
    clock.now += 0.1
    assert guard.answer(KEY, approve=True) is ApprovalReply.DEADLINE_PASSED
    result = run(guard, runs)
    assert isinstance(result, Finished)
    assert (result.outcome.record, result.outcome.error) == (Record.REJECTED,
                                                             reject_text(RejectReason.DEADLINE))
    assert runs == []
    assert guard.approvals()[0].expired == clock.now


@pytest.mark.clause("TC-REC-REJ")
def test_a_rejected_call_never_runs(tmp_path: Path) -> None:
    guard, runs = gated(tmp_path, Clock())
    assert guard.answer(KEY, approve=False) is ApprovalReply.ACCEPTED
    result = run(guard, runs)
    assert isinstance(result, Finished)
    assert (result.outcome.error, runs) == (reject_text(RejectReason.PERSON), [])


@pytest.mark.clause("D-7", "TC-APR-3")
def test_a_call_that_needs_no_approval_cannot_be_answered(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db")
    guard.ask(KEY, "lookup", "{}", Statement(ToolPolicy(EffectClass.READ)))
    assert guard.answer(KEY, approve=True) is ApprovalReply.NOT_REQUIRED
    with pytest.raises(UnknownCall):
        guard.answer("s/t1/c9", approve=True)


@pytest.mark.clause("TC-AMO-2", "TC-APR-2", "D-7")
def test_an_approved_write_killed_after_its_effect_is_neither_asked_again_nor_run_again(
        tmp_path: Path, children: Children) -> None:
    journal, ran = tmp_path / "guard.db", tmp_path / "effects"
    guard = Guard(journal)
    guard.ask(KEY, "tool", "{}", Statement(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE)))
    assert guard.answer(KEY, approve=True) is ApprovalReply.ACCEPTED
    children.run_killed(journal, KEY, "non_idempotent_write", ran, gated=True)
    assert guard.approval(KEY) is ApprovalState.APPROVED
    result = asyncio.run(guard.run(KEY, _never))
    assert isinstance(result, Finished)
    assert result.outcome.record is Record.OUTCOME_UNKNOWN
    assert effects(ran) == [f"{KEY}#1"]


async def _never(attempt: Attempt) -> str:
    raise AssertionError("the tool ran again")
