"""The four records a call ends with, and how a call's attempt history decides its record.

Clause ids: TC-REC-*, TC-AMO-2, TC-AMO-3, TC-RCN-1, decisions D-3, D-4, D-9, D-10.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, retries_allowed


class Record(enum.Enum):
    """How a tool call ends; each call gets exactly one, never changed (TC-REC-1)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REJECTED = "rejected"
    OUTCOME_UNKNOWN = "outcome_unknown"

    @classmethod
    def parse(cls, name: object) -> Record:
        if isinstance(name, Record):
            return name
        for member in cls:
            if member.value == name:
                return member
        known = ", ".join(m.value for m in cls)
        raise SpecError(f"unknown record {name!r} (known: {known})")


class AttemptEnd(enum.Enum):
    """How one attempt of a call ended."""

    NOT_REACHED = "not_reached"
    """Ended before the attempt was handed to a worker: the tool did not run."""
    RETURNED = "returned"
    """The tool returned a result."""
    TOOL_FAILED = "tool_failed"
    """The tool itself reported a failure (D-3)."""
    WORKER_LOST = "worker_lost"
    """Handed to a worker, which then stopped or lost its connection (TC-REC-LOST)."""
    CANCELLED = "cancelled"
    """Handed to a worker, then cancelled or timed out; the tool may still be running (TC-AMO-3)."""

    @property
    def reached_worker(self) -> bool:
        return self is not AttemptEnd.NOT_REACHED


class AttemptProgress(enum.Enum):
    """How far an attempt that ended without the tool's answer got, in the three states and
    the names Dex gives them (`RecoveryErrorInfo.attempt_progress`, protocol 4): the history
    shows it for each such attempt, and a record's error names it (D-5, D-30, D-31)."""

    NOT_STARTED = "NOT_STARTED"
    """Never handed to a worker: the tool did not run (D-5, D-10)."""
    NOT_COMPLETED = "NOT_COMPLETED"
    """Handed to a worker, then it ended without a result: lost, cancelled or timed out."""
    UNSPECIFIED = "UNSPECIFIED"
    """Not known: written by a version that kept no progress; treated as reached (D-5, D-31)."""

    @property
    def reached_worker(self) -> bool:
        """Whether the attempt counts as reached: anything but NOT_STARTED (D-5)."""
        return self is not AttemptProgress.NOT_STARTED

    @classmethod
    def of_end(cls, end: AttemptEnd) -> AttemptProgress | None:
        """The progress of an attempt that ended with `end`; None when the tool answered
        (returned, or reported a failure), which needs no recovery."""
        if end is AttemptEnd.NOT_REACHED:
            return cls.NOT_STARTED
        if end in (AttemptEnd.WORKER_LOST, AttemptEnd.CANCELLED):
            return cls.NOT_COMPLETED
        return None

    def tag(self) -> str:
        """How a record's error names it: `(attempt progress NOT_STARTED)`."""
        return f"(attempt progress {self.value})"


class FailureKind(enum.Enum):
    """Which of the failed record's error texts applies."""

    DID_NOT_RUN = "did_not_run"
    TOOL_ERROR = "tool_error"
    MAY_HAVE_RUN = "may_have_run"
    MAY_STILL_BE_RUNNING = "may_still_be_running"


class RejectReason(enum.Enum):
    """Why a call was rejected (TC-REC-REJ)."""

    PERSON = "person"
    DEADLINE = "deadline"


# TC-REC-NOTRUN: the exact opening of the error of a call that never reached a worker.
DID_NOT_RUN_PREFIX = "the tool did not run, so it is safe to call again"

_NOT_STARTED = AttemptProgress.NOT_STARTED.tag()
_NOT_COMPLETED = AttemptProgress.NOT_COMPLETED.tag()

# Each failed error after an attempt that ended without the tool's answer names its progress,
# as Dex's recovery detail does; the did-not-run one is the prefix, ": ", then the detail.
_FAILURE_TEXT: dict[FailureKind, str] = {
    FailureKind.DID_NOT_RUN: f"{DID_NOT_RUN_PREFIX}: no attempt reached a worker {_NOT_STARTED}",
    FailureKind.TOOL_ERROR: "the tool reported a failure",
    FailureKind.MAY_HAVE_RUN: "the tool may have run: an attempt reached a worker that then "
    f"stopped, and no attempts are left {_NOT_COMPLETED}",
    FailureKind.MAY_STILL_BE_RUNNING: "the attempt was cancelled after it reached a worker "
    f"{_NOT_COMPLETED}; the tool may still be running, so calling it again can repeat its "
    "effect",
}

OUTCOME_UNKNOWN_ERROR = (
    "outcome unknown: an attempt reached a worker and ended without a result, so the tool may or "
    "may not have taken effect; it will not be run again; reconcile it with its idempotency key"
)

_UNKNOWN_DETAIL: dict[AttemptEnd, str] = {
    AttemptEnd.WORKER_LOST: f"its worker stopped or lost its connection {_NOT_COMPLETED}",
    AttemptEnd.CANCELLED: "it was cancelled or timed out, and the tool may still be running "
    f"{_NOT_COMPLETED}",
    AttemptEnd.NOT_REACHED: f"an earlier attempt reached a worker {_NOT_COMPLETED}; the last "
    "one never did",
}
UNSPECIFIED_DETAIL = (
    f"written by a version that kept no attempt progress {AttemptProgress.UNSPECIFIED.tag()}"
)
"""The detail of a record whose attempt's progress is not known (D-31)."""


def unknown_detail(end: AttemptEnd) -> str:
    """The detail of an outcome_unknown error: how its last attempt ended and its progress."""
    return _UNKNOWN_DETAIL.get(end, "")

_REJECT_TEXT: dict[RejectReason, str] = {
    RejectReason.PERSON: "rejected: a person rejected the call",
    RejectReason.DEADLINE: "rejected: the approval deadline passed before anyone answered",
}


def failure_text(kind: FailureKind, detail: str = "") -> str:
    """The error of a failed record; only DID_NOT_RUN opens with the safe-to-call-again wording."""
    text = _FAILURE_TEXT[kind]
    return f"{text}: {detail}" if detail else text


def reject_text(reason: RejectReason) -> str:
    return _REJECT_TEXT[reason]


def failure_kind(error: str) -> FailureKind | None:
    """Which failed record's error `error` is, by the text it opens with (the did-not-run one
    by its prefix alone); None when it opens with none of them."""
    for kind, text in _FAILURE_TEXT.items():
        if error.startswith(DID_NOT_RUN_PREFIX if kind is FailureKind.DID_NOT_RUN else text):
            return kind
    return None


def reject_reason(error: str) -> RejectReason | None:
    """Why a rejected record's error says it was rejected; None when it says neither."""
    for reason, text in _REJECT_TEXT.items():
        if error.startswith(text):
            return reason
    return None


@dataclass(frozen=True)
class Decision:
    """What happens after an attempt ends: another attempt, or the call's record."""

    retry: bool
    record: Record | None
    failure: FailureKind | None


def decide(
    effect: EffectClass,
    end: AttemptEnd,
    attempts_made: int,
    max_attempts: int,
    reached_before: bool,
    cancel_records_failed: bool = False,
) -> Decision:
    """The decision after attempt number `attempts_made` ended with `end`.

    `reached_before` says whether an earlier attempt reached a worker. A single-attempt class
    never gets another attempt (TC-EFF-NONIDEM, D-10); retries are for infrastructure failures
    after which the tool may have run (TC-REC-LOST, TC-REC-RETRY, D-9), never for a failure the
    tool reported (D-3); when attempts run out after a reach, a read records failed
    (TC-REC-EXHAUST-READ) and any other class outcome_unknown (TC-REC-EXHAUST-OTHER), a
    cancelled or timed-out single attempt among them (D-4, as Dex records it). With D-4's
    other choice, `cancel_records_failed`, that cancelled single attempt records failed saying
    the tool may still be running (F-7).

    pre: 1 <= attempts_made <= max_attempts
    post: __return__.retry == (__return__.record is None)
    post: (__return__.failure is not None) == (__return__.record is Record.FAILED)
    post: not __return__.retry or (retries_allowed(effect) and attempts_made < max_attempts)
    post: not __return__.retry or end in (AttemptEnd.NOT_REACHED, AttemptEnd.WORKER_LOST, AttemptEnd.CANCELLED)
    post: (__return__.record is Record.SUCCEEDED) == (end is AttemptEnd.RETURNED)
    post: __return__.failure is not FailureKind.DID_NOT_RUN or (end is AttemptEnd.NOT_REACHED and not reached_before)
    post: __return__.record is not Record.OUTCOME_UNKNOWN or effect is not EffectClass.READ
    post: __return__.record is not Record.OUTCOME_UNKNOWN or reached_before or end.reached_worker
    post: not (end is AttemptEnd.CANCELLED and not retries_allowed(effect) and effect is not EffectClass.READ) or (__return__.record is (Record.FAILED if cancel_records_failed else Record.OUTCOME_UNKNOWN))
    post: __return__.record is not Record.REJECTED
    post: not (end is AttemptEnd.NOT_REACHED and not reached_before) or __return__.retry or __return__.failure is FailureKind.DID_NOT_RUN
    """
    if end is AttemptEnd.RETURNED:
        return Decision(False, Record.SUCCEEDED, None)
    if end is AttemptEnd.TOOL_FAILED:
        return Decision(False, Record.FAILED, FailureKind.TOOL_ERROR)
    if retries_allowed(effect) and attempts_made < max_attempts:
        return Decision(True, None, None)
    if not reached_before and end is AttemptEnd.NOT_REACHED:
        return Decision(False, Record.FAILED, FailureKind.DID_NOT_RUN)
    if effect is EffectClass.READ:
        kind = (
            FailureKind.MAY_STILL_BE_RUNNING
            if end is AttemptEnd.CANCELLED
            else FailureKind.MAY_HAVE_RUN
        )
        return Decision(False, Record.FAILED, kind)
    if cancel_records_failed and not retries_allowed(effect) and end is AttemptEnd.CANCELLED:
        return Decision(False, Record.FAILED, FailureKind.MAY_STILL_BE_RUNNING)
    return Decision(False, Record.OUTCOME_UNKNOWN, None)


@dataclass(frozen=True)
class Outcome:
    """A call's record and its error text, as the model reads them."""

    record: Record
    error: str
    failure: FailureKind | None = None


def record_of(decision: Decision, detail: str = "") -> Outcome:
    """The record and error text for a final decision."""
    if decision.record is None:
        raise SpecError("a retry decision has no record")
    if decision.record is Record.FAILED:
        assert decision.failure is not None
        return Outcome(Record.FAILED, failure_text(decision.failure, detail), decision.failure)
    if decision.record is Record.OUTCOME_UNKNOWN:
        error = f"{OUTCOME_UNKNOWN_ERROR}: {detail}" if detail else OUTCOME_UNKNOWN_ERROR
        return Outcome(Record.OUTCOME_UNKNOWN, error)
    return Outcome(decision.record, "")


def classify_attempts(
    effect: EffectClass, ends: Sequence[AttemptEnd], max_attempts: int,
    cancel_records_failed: bool = False,
) -> Decision:
    """Fold a call's attempt history through `decide`; SpecError if the history is impossible.

    A history is impossible when an attempt follows a final decision, or when it is empty.
    The last decision is returned: a retry means another attempt may be made now.
    """
    if not isinstance(max_attempts, int) or isinstance(max_attempts, bool) or max_attempts < 1:
        raise SpecError(f"max_attempts must be a whole number >= 1, got {max_attempts!r}")
    if not ends:
        raise SpecError("an attempt history needs at least one attempt")
    effect = EffectClass.parse(effect)
    reached = False
    decision = Decision(True, None, None)
    for number, end in enumerate(ends, start=1):
        if not isinstance(end, AttemptEnd):
            raise SpecError(f"attempt {number} ended with {end!r}, which is not an AttemptEnd")
        if not decision.retry or number > max_attempts:
            raise SpecError(
                f"attempt {number} cannot exist: the call was already decided after "
                f"attempt {number - 1}"
            )
        decision = decide(effect, end, number, max_attempts, reached, cancel_records_failed)
        reached = reached or end.reached_worker
    return decision


def rejected(reason: RejectReason) -> Outcome:
    """The record of a call a person rejected or whose approval deadline passed (TC-REC-REJ)."""
    return Outcome(Record.REJECTED, reject_text(reason))
