"""Approval: the class defaults, explicit settings, and the defined answer to every edge case."""

from __future__ import annotations

import pytest

from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.policy import APPROVAL_DEFAULT_BY_EFFECT, EffectClass
from atmostonce.spec.protocol import Reply, TimerFired, TimerKind
from atmostonce.spec.records import RejectReason, reject_text
from atmostonce.spec.session import ToolCallStatus
from tests.executor.driver import Driver

NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE


def waiting(effect: EffectClass = NONIDEM) -> tuple[Driver, str]:
    d = Driver()
    d.open()
    d.policy("tool", effect, requires_approval=True)
    return d, d.ask("tool")


@pytest.mark.clause("TC-APR-2", "TC-EFF-READ", "TC-EFF-IDEM", "TC-EFF-NONIDEM", "TC-EFF-UNCL")
@pytest.mark.parametrize("effect", list(EffectClass), ids=lambda e: e.value)
def test_class_default_decides_when_requires_approval_is_unset(effect: EffectClass) -> None:
    d = Driver()
    d.open()
    d.policy("tool", effect)
    key = d.ask("tool")
    waits = APPROVAL_DEFAULT_BY_EFFECT[effect]
    assert (d.view(key).status is ToolCallStatus.AWAITING_APPROVAL) == waits
    assert d.pending(TimerKind.APPROVAL_DEADLINE, key) == waits
    assert (d.poll("w1") is None) == waits


@pytest.mark.clause("TC-APR-3")
@pytest.mark.parametrize("effect", list(EffectClass), ids=lambda e: e.value)
def test_requires_approval_true_makes_every_class_wait(effect: EffectClass) -> None:
    d, key = waiting(effect)
    assert d.view(key).status is ToolCallStatus.AWAITING_APPROVAL
    assert d.poll("w1") is None


@pytest.mark.clause("TC-APR-4", "TC-AMO-2")
def test_requires_approval_false_runs_a_write_without_approval_and_once() -> None:
    d = Driver()
    d.open()
    d.policy("tool", NONIDEM, requires_approval=False)
    key = d.ask("tool")
    go = d.poll("w1")
    assert go is not None
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w1")
    assert d.view(key).status is ToolCallStatus.OUTCOME_UNKNOWN
    assert d.poll("w2") is None


@pytest.mark.clause("TC-APR-2", "D-7")
def test_approval_queues_the_first_attempt_and_stops_the_deadline() -> None:
    d, key = waiting()
    reply = d.answer(key, approve=True)
    assert reply == Reply("r1", True, REPLY_TEXT[ApprovalReply.ACCEPTED])
    assert not d.pending(TimerKind.APPROVAL_DEADLINE, key)
    assert d.view(key).status is ToolCallStatus.RUNNING
    go = d.poll("w1")
    assert go is not None
    assert go.attempt == f"{key}#1"
    persist_index = next(i for i, e in enumerate(d.journal) if e["type"] == "approval")
    assert d.journal[persist_index]["state"] == "approved"


@pytest.mark.clause("TC-REC-REJ", "D-7")
def test_rejection_records_rejected_and_never_runs() -> None:
    d, key = waiting()
    assert d.answer(key, approve=False).ok
    view = d.view(key)
    assert (view.status, view.error) == (ToolCallStatus.REJECTED, reject_text(RejectReason.PERSON))
    assert [e.status for e in d.published] == [ToolCallStatus.REJECTED]
    assert d.poll("w1") is None
    assert not d.entries("queued")


@pytest.mark.clause("TC-REC-REJ", "D-7")
def test_deadline_rejects_a_call_nobody_answered() -> None:
    d, key = waiting()
    d.fire(TimerKind.APPROVAL_DEADLINE, key)
    view = d.view(key)
    assert (view.status, view.error) == (ToolCallStatus.REJECTED,
                                         reject_text(RejectReason.DEADLINE))
    assert d.poll("w1") is None


@pytest.mark.clause("D-7", "TC-REC-1")
@pytest.mark.parametrize(
    ("first", "second", "reply", "status"),
    [
        ("approve", "approve", ApprovalReply.ALREADY_APPROVED, ToolCallStatus.RUNNING),
        ("approve", "reject", ApprovalReply.ALREADY_APPROVED, ToolCallStatus.RUNNING),
        ("reject", "approve", ApprovalReply.ALREADY_REJECTED, ToolCallStatus.REJECTED),
        ("reject", "reject", ApprovalReply.ALREADY_REJECTED, ToolCallStatus.REJECTED),
        ("deadline", "approve", ApprovalReply.DEADLINE_PASSED, ToolCallStatus.REJECTED),
        ("deadline", "reject", ApprovalReply.DEADLINE_PASSED, ToolCallStatus.REJECTED),
    ],
)
def test_a_later_answer_changes_nothing_and_says_why(
    first: str, second: str, reply: ApprovalReply, status: ToolCallStatus,
) -> None:
    d, key = waiting()
    if first == "deadline":
        d.fire(TimerKind.APPROVAL_DEADLINE, key)
    else:
        assert d.answer(key, first == "approve").ok
    records = len(d.entries("record"))
    queued = len(d.entries("queued"))
    answered = d.answer(key, second == "approve", request="r2")
    assert answered == Reply("r2", False, REPLY_TEXT[reply])
    assert d.view(key).status is status
    assert (len(d.entries("record")), len(d.entries("queued"))) == (records, queued)


@pytest.mark.clause("D-7", "TC-APR-2")
def test_answering_a_call_that_needs_no_approval_is_refused() -> None:
    d = Driver()
    d.open()
    d.policy("lookup", EffectClass.READ)
    key = d.ask("lookup")
    for approve in (True, False):
        assert d.answer(key, approve) == Reply("r1", False,
                                               REPLY_TEXT[ApprovalReply.NOT_REQUIRED])
    assert d.view(key).status is ToolCallStatus.RUNNING


@pytest.mark.clause("D-7")
def test_an_answer_for_an_unknown_key_is_refused_with_a_reason() -> None:
    d = Driver()
    reply = d.answer("s1/t1/nope", True)
    assert not reply.ok
    assert "s1/t1/nope" in reply.text


@pytest.mark.clause("D-7")
def test_a_deadline_after_the_approval_is_a_no_op() -> None:
    d, key = waiting()
    deadline = d.timers[(TimerKind.APPROVAL_DEADLINE, key)]
    d.answer(key, True)
    assert d.send(TimerFired(d.now, deadline.timer)) == []
    assert d.view(key).status is ToolCallStatus.RUNNING


@pytest.mark.clause("D-7", "D-32")
@pytest.mark.parametrize("approve", [True, False], ids=["approve", "reject"])
def test_an_answer_after_the_kept_deadline_loses_to_it_though_its_timer_is_late(
    approve: bool,
) -> None:
    d, key = waiting()
    d.now += d.config.approval_deadline
    assert d.pending(TimerKind.APPROVAL_DEADLINE, key)
    answered = d.answer(key, approve)
    assert answered == Reply("r1", False, REPLY_TEXT[ApprovalReply.DEADLINE_PASSED])
    view = d.view(key)
    assert (view.status, view.error) == (ToolCallStatus.REJECTED,
                                         reject_text(RejectReason.DEADLINE))
    assert not d.pending(TimerKind.APPROVAL_DEADLINE, key)
    assert d.poll("w1") is None
