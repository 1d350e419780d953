"""Approval: defaults decide who waits, the first answer decides, late answers change nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atmostonce.spec.approval import (
    APPROVAL_TABLE,
    ApprovalEvent,
    ApprovalReply,
    ApprovalState,
    answer,
    initial_approval,
    is_rejection,
    may_attempt,
)

W = ApprovalState.WAITING


@pytest.mark.clause("D-7")
def test_table_answers_every_state_and_event() -> None:
    assert set(APPROVAL_TABLE) == {(s, e) for s in ApprovalState for e in ApprovalEvent}


@pytest.mark.clause("D-7", "TC-REC-REJ")
@pytest.mark.parametrize(("events", "final", "replies"), [
    ((ApprovalEvent.APPROVE, ApprovalEvent.APPROVE), ApprovalState.APPROVED,
     [ApprovalReply.ACCEPTED, ApprovalReply.ALREADY_APPROVED]),
    ((ApprovalEvent.REJECT, ApprovalEvent.APPROVE), ApprovalState.REJECTED,
     [ApprovalReply.ACCEPTED, ApprovalReply.ALREADY_REJECTED]),
    ((ApprovalEvent.DEADLINE, ApprovalEvent.APPROVE), ApprovalState.EXPIRED,
     [ApprovalReply.ACCEPTED, ApprovalReply.DEADLINE_PASSED]),
    ((ApprovalEvent.APPROVE, ApprovalEvent.REJECT), ApprovalState.APPROVED,
     [ApprovalReply.ACCEPTED, ApprovalReply.ALREADY_APPROVED]),
    ((ApprovalEvent.APPROVE, ApprovalEvent.DEADLINE), ApprovalState.APPROVED,
     [ApprovalReply.ACCEPTED, ApprovalReply.ALREADY_APPROVED]),
])
def test_the_first_answer_decides(
    events: tuple[ApprovalEvent, ...], final: ApprovalState, replies: list[ApprovalReply]
) -> None:
    state, got = W, []
    for event in events:
        state, reply = answer(state, event)
        got.append(reply)
    assert (state, got) == (final, replies)


@pytest.mark.clause("D-7", "TC-APR-2")
@pytest.mark.parametrize("event", list(ApprovalEvent))
def test_a_call_that_needs_no_approval_cannot_be_answered(event: ApprovalEvent) -> None:
    state = initial_approval(False)
    assert answer(state, event) == (state, ApprovalReply.NOT_REQUIRED)
    assert may_attempt(state)


@pytest.mark.clause("TC-APR-3", "TC-REC-REJ")
@given(st.lists(st.sampled_from(ApprovalEvent), max_size=6))
def test_no_attempt_before_approval_and_never_after_a_rejection(
    events: list[ApprovalEvent],
) -> None:
    state = initial_approval(True)
    assert not may_attempt(state)
    rejected_once = False
    for event in events:
        state, _ = answer(state, event)
        rejected_once = rejected_once or is_rejection(state)
        if rejected_once:
            assert not may_attempt(state)
            assert is_rejection(state)
