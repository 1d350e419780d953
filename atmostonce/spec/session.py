"""The session API's shapes: the snapshot, each call's kept policy, deadline and attempt history,
messages, the tool result text and finished events.

The names and shapes are those the page's reconcile example is written against (TC-RCN-NAMES):
`OUTCOME_UNKNOWN_TOOL_RESULT` in a tool result's output, an `AgentSnapshot` whose messages carry
a `MessageRole`, their text, turn and tool call ids, tool output and arguments.
Clause ids: TC-REC-2, TC-RCN-1, TC-RCN-FIND, TC-RCN-NAMES, TC-SNAP-1, TC-RCN-HISTORY, D-30,
D-32.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import (
    AttemptEnd,
    AttemptProgress,
    FailureKind,
    Outcome,
    Record,
    failure_text,
)


class ToolCallStatus(enum.Enum):
    """A tool call's status in `get_agent_snapshot`: in progress, or its record."""

    AWAITING_APPROVAL = "awaiting_approval"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REJECTED = "rejected"
    OUTCOME_UNKNOWN = "outcome_unknown"

    @classmethod
    def of_record(cls, record: Record) -> ToolCallStatus:
        return cls(record.value)

    @property
    def final(self) -> bool:
        return self not in (ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.RUNNING)


class MessageRole(enum.Enum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


# TC-RCN-1, TC-RCN-FIND: the marker a tool result carries when the outcome is unknown.
OUTCOME_UNKNOWN_TOOL_RESULT = "[outcome_unknown] the tool may or may not have taken effect"

# D-20, F-7: how the tool result of a failed call opens when the tool may still be running (a
# cancelled or timed-out attempt under D-4's other choice); `reconcile --include-cancelled`
# looks for it.
MAY_STILL_BE_RUNNING_TOOL_RESULT = (
    f"{Record.FAILED.value}: {failure_text(FailureKind.MAY_STILL_BE_RUNNING)}"
)


@dataclass(frozen=True)
class AttemptView:
    """One attempt of a call as the Flow's history shows it (TC-RCN-HISTORY, D-30): when it was
    queued, when it was handed to which worker (from then on it counts as reached, D-5), when
    that worker's `Started` arrived, how and when it ended, and for an attempt that ended
    without the tool's answer its progress as Dex names it (NOT_STARTED, NOT_COMPLETED, or
    UNSPECIFIED, which counts as reached). Times are the server's clock; None is not yet, or
    not known: `started_at` is what this server process saw, so an attempt handed out before a
    restart shows none."""

    number: int
    queued_at: float
    worker: str = ""
    handed_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    end: AttemptEnd | None = None
    progress: AttemptProgress | None = None

    @property
    def reached(self) -> bool:
        """Whether the attempt reached a worker: it was handed out (D-5), or its progress says
        so or is not known (UNSPECIFIED is treated as reached, D-31)."""
        if self.handed_at is not None:
            return True
        return self.progress is not None and self.progress.reached_worker


@dataclass(frozen=True)
class ToolCallView:
    """One tool call as `get_agent_snapshot` lists it under `tool_calls`: with the effect class
    and approval rule it kept when it was asked (TC-SNAP-1), its approval deadline (D-32) and
    its attempts (D-30). An engine that does not show those leaves them unset: None, and
    `history` false, which says `attempts` is not the call's history."""

    turn_id: str
    tool_call_id: str
    tool: str
    status: ToolCallStatus
    error: str = ""
    idempotency_key: str = ""
    effect: EffectClass | None = None
    requires_approval: bool | None = None
    approval_deadline: float | None = None
    """Seconds from the ask a person has to answer; None for a call that needs no approval."""
    attempts: tuple[AttemptView, ...] = ()
    history: bool = False
    """Whether `attempts` is every attempt the call had, as the Flow's history records them."""


@dataclass(frozen=True)
class Message:
    """One message of the session history; tool results carry the call's turn and id."""

    role: MessageRole
    text: str = ""
    turn_id: str = ""
    tool_call_id: str = ""
    tool_output: str = ""
    tool_arguments: str = ""


@dataclass(frozen=True)
class AgentSnapshot:
    """What `get_agent_snapshot` returns: the session's tool calls and its message history."""

    session_id: str
    tool_calls: tuple[ToolCallView, ...]
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class ToolCallFinished:
    """The AgentEvents stream's `tool_call_finished` event; its status is the call's record."""

    session_id: str
    turn_id: str
    tool_call_id: str
    status: ToolCallStatus
    error: str = ""
    kind: str = "tool_call_finished"


def tool_result_text(outcome: Outcome, result: str = "") -> str:
    """The tool result the model reads for a finished call; every record reaches the model
    and none of them fails the session (TC-REC-2). It opens with the record's name once: an
    error that already does (a rejection's) is not prefixed again."""
    if outcome.record is Record.SUCCEEDED:
        return result
    if outcome.record is Record.OUTCOME_UNKNOWN:
        return f"{OUTCOME_UNKNOWN_TOOL_RESULT}: {outcome.error}"
    opening = f"{outcome.record.value}: "
    return outcome.error if outcome.error.startswith(opening) else opening + outcome.error
