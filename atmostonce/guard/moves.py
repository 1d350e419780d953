"""What the guard does with a call each time the framework runs its tool function: the page's
rules as one pure function of what the journal holds, so a run in a new process after a crash
decides from the same facts as the process that died.

- a result is kept: give it back, never run the tool (a finished call runs once);
- approval waiting: wait (the binding asks the person); rejected or past the deadline: the
  rejected record (TC-REC-REJ);
- otherwise the attempts so far, an attempt whose run never ended counting as one whose worker
  stopped, decide by the spec's rules (`atmostonce.spec.records.classify_attempts`): another
  attempt for a read or an idempotent write with attempts left, else the record; a
  single-attempt call with an attempt already begun is outcome_unknown, never run again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from atmostonce.spec.approval import ApprovalState, is_rejection
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import (
    AttemptEnd,
    Outcome,
    Record,
    RejectReason,
    classify_attempts,
    record_of,
    rejected,
    unknown_detail,
)


@dataclass(frozen=True)
class Replay:
    """The call already has its record: give back the kept result."""


@dataclass(frozen=True)
class Wait:
    """The call waits for a person's approval."""


@dataclass(frozen=True)
class Run:
    """Begin attempt `number`: write its intent, then run the tool."""

    number: int


@dataclass(frozen=True)
class Settle:
    """End the call with `outcome` without running the tool."""

    outcome: Outcome


Move = Replay | Wait | Run | Settle


def next_move(has_result: bool, approval: ApprovalState, effect: EffectClass,
              ends: Sequence[AttemptEnd | None], max_attempts: int) -> Move:
    """The move for a call (see the module docstring): `effect` is its kept effect class,
    `ends` how each of its attempts ended, None for one whose run never ended."""
    if has_result:
        return Replay()
    if approval is ApprovalState.WAITING:
        return Wait()
    if is_rejection(approval):
        reason = (RejectReason.DEADLINE if approval is ApprovalState.EXPIRED
                  else RejectReason.PERSON)
        return Settle(rejected(reason))
    if not ends:
        return Run(1)
    lost = [AttemptEnd.WORKER_LOST if end is None else end for end in ends]
    decision = classify_attempts(effect, lost, max_attempts)
    if decision.retry:
        return Run(len(ends) + 1)
    unknown = decision.record is Record.OUTCOME_UNKNOWN
    return Settle(record_of(decision, unknown_detail(lost[-1]) if unknown else ""))
