"""Approval of a call: the explicit table of answers, including the edge cases (decision D-7).

Clause ids: TC-APR-*, TC-REC-REJ, decision D-7.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class ApprovalState(enum.Enum):
    """Where a call stands with respect to approval."""

    NOT_REQUIRED = "not_required"
    WAITING = "waiting"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class ApprovalEvent(enum.Enum):
    """What can happen to a call's approval: a person's answer, or the deadline timer."""

    APPROVE = "approve"
    REJECT = "reject"
    DEADLINE = "deadline"


class ApprovalReply(enum.Enum):
    """What the engine answers; everything but ACCEPTED leaves the call as it was."""

    ACCEPTED = "accepted"
    ALREADY_APPROVED = "already_approved"
    ALREADY_REJECTED = "already_rejected"
    DEADLINE_PASSED = "deadline_passed"
    NOT_REQUIRED = "not_required"


_S = ApprovalState
_E = ApprovalEvent
_R = ApprovalReply

# D-7: (state, event) -> (next state, reply). The first answer that lands decides; later
# answers change nothing and say why. A call that needs no approval cannot be approved or
# rejected, and its deadline never fires.
APPROVAL_TABLE: Mapping[
    tuple[ApprovalState, ApprovalEvent], tuple[ApprovalState, ApprovalReply]
] = {
    (_S.WAITING, _E.APPROVE): (_S.APPROVED, _R.ACCEPTED),
    (_S.WAITING, _E.REJECT): (_S.REJECTED, _R.ACCEPTED),
    (_S.WAITING, _E.DEADLINE): (_S.EXPIRED, _R.ACCEPTED),
    (_S.APPROVED, _E.APPROVE): (_S.APPROVED, _R.ALREADY_APPROVED),
    (_S.APPROVED, _E.REJECT): (_S.APPROVED, _R.ALREADY_APPROVED),
    (_S.APPROVED, _E.DEADLINE): (_S.APPROVED, _R.ALREADY_APPROVED),
    (_S.REJECTED, _E.APPROVE): (_S.REJECTED, _R.ALREADY_REJECTED),
    (_S.REJECTED, _E.REJECT): (_S.REJECTED, _R.ALREADY_REJECTED),
    (_S.REJECTED, _E.DEADLINE): (_S.REJECTED, _R.ALREADY_REJECTED),
    (_S.EXPIRED, _E.APPROVE): (_S.EXPIRED, _R.DEADLINE_PASSED),
    (_S.EXPIRED, _E.REJECT): (_S.EXPIRED, _R.DEADLINE_PASSED),
    (_S.EXPIRED, _E.DEADLINE): (_S.EXPIRED, _R.DEADLINE_PASSED),
    (_S.NOT_REQUIRED, _E.APPROVE): (_S.NOT_REQUIRED, _R.NOT_REQUIRED),
    (_S.NOT_REQUIRED, _E.REJECT): (_S.NOT_REQUIRED, _R.NOT_REQUIRED),
    (_S.NOT_REQUIRED, _E.DEADLINE): (_S.NOT_REQUIRED, _R.NOT_REQUIRED),
}

REPLY_TEXT: Mapping[ApprovalReply, str] = {
    _R.ACCEPTED: "accepted",
    _R.ALREADY_APPROVED: "the call was already approved; the answer changes nothing",
    _R.ALREADY_REJECTED: "the call was already rejected; it will never run",
    _R.DEADLINE_PASSED: "the approval deadline already passed; the call is recorded as rejected",
    _R.NOT_REQUIRED: "the call does not wait for approval; there is nothing to answer",
}


def initial_approval(requires_approval: bool) -> ApprovalState:
    """The approval state of a call at ask time (TC-APR-2, TC-APR-3, TC-APR-4).

    post: (__return__ is ApprovalState.WAITING) == requires_approval
    """
    return ApprovalState.WAITING if requires_approval else ApprovalState.NOT_REQUIRED


def answer(state: ApprovalState, event: ApprovalEvent) -> tuple[ApprovalState, ApprovalReply]:
    """Apply an answer or the deadline to a call's approval state (D-7).

    post: (__return__[1] is ApprovalReply.ACCEPTED) == (state is ApprovalState.WAITING)
    post: state is ApprovalState.WAITING or __return__[0] is state
    post: state is not ApprovalState.REJECTED or __return__[0] is ApprovalState.REJECTED
    post: __return__[0] is not ApprovalState.APPROVED or state is ApprovalState.APPROVED or event is ApprovalEvent.APPROVE
    """
    return APPROVAL_TABLE[(state, event)]


def may_attempt(state: ApprovalState) -> bool:
    """Whether an attempt may start: approved or not required; never waiting or rejected.

    post: __return__ == (state in (ApprovalState.APPROVED, ApprovalState.NOT_REQUIRED))
    """
    return state is ApprovalState.APPROVED or state is ApprovalState.NOT_REQUIRED


def is_rejection(state: ApprovalState) -> bool:
    """Whether the approval state ends the call as rejected (TC-REC-REJ)."""
    return state is ApprovalState.REJECTED or state is ApprovalState.EXPIRED
