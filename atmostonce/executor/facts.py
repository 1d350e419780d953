"""What each journal entry states, as a fact `recovery` folds into the executor's tables; `reader`
makes them out of the entries `journal` writes.
"""

from __future__ import annotations

from typing import NamedTuple

from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.policy import EffectClass, EffectivePolicy, ToolHints, ToolPolicy
from atmostonce.spec.records import AttemptEnd, Outcome

# Facts are named tuples: immutable, and cheap to make once per entry of every recovery.


class PolicySet(NamedTuple):
    at: float
    tool: str
    policy: ToolPolicy | None
    hints: ToolHints | None


class SessionOpened(NamedTuple):
    at: float
    session_id: str
    default_effect: EffectClass | None
    hints_may_lower: bool = True


class Asked(NamedTuple):
    at: float
    key: str
    session_id: str
    turn_id: str
    tool_call_id: str
    tool: str
    arguments: str
    policy: EffectivePolicy
    approval_deadline: float | None
    """None in a journal written before calls kept their own deadline (D-32)."""


class Answered(NamedTuple):
    at: float
    key: str
    state: ApprovalState


class Queued(NamedTuple):
    at: float
    key: str
    attempt: str
    number: int


class Handed(NamedTuple):
    at: float
    key: str
    attempt: str
    number: int
    worker: str


class Ended(NamedTuple):
    at: float
    key: str
    attempt: str
    number: int
    end: AttemptEnd
    may_still_run: bool
    output: str


class Recorded(NamedTuple):
    at: float
    key: str
    outcome: Outcome
    output: str


class UserMessageAdded(NamedTuple):
    at: float
    session_id: str
    text: str


class RunOver(NamedTuple):
    at: float
    attempt: str
    worker: str


class WorkerLost(NamedTuple):
    at: float
    worker: str


Fact = (PolicySet | SessionOpened | Asked | Answered | Queued | Handed | Ended | Recorded
        | UserMessageAdded | RunOver | WorkerLost)
