"""What the chaos harness's clients saw, as it happened: the raw material of the history.

Every time is `time.monotonic()`, the clock the ledger and the server read too. A request is
stamped when it is sent and, when its answer comes, when that arrives; the history builder
decides which of the two stands for the moment the server acted (`atmostonce.chaos.build`).
Entries that need no such choice (policies set, sessions opened, calls asked, reconcile runs)
are history entries already. Everything here is appended on the harness's event loop.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from atmostonce.check.history import entries as h
from atmostonce.spec.session import AgentSnapshot, ToolCallStatus, ToolCallView


def now() -> float:
    """The clock every observation is stamped with."""
    return time.monotonic()


@dataclass(frozen=True)
class AnswerSeen:
    """A person's answer and the reply; `accepted` is None when no reply came."""

    sent: float
    replied: float | None
    key: str
    approve: bool
    accepted: bool | None
    text: str = ""


@dataclass(frozen=True)
class EventSeen:
    """A `tool_call_finished` event from a session's AgentEvents stream. `stream` names the
    subscription: one listener's `generation`-th subscription, made at `subscribed`."""

    at: float
    key: str
    status: ToolCallStatus
    error: str
    stream: tuple[str, int]
    subscribed: float


@dataclass(frozen=True)
class SnapshotSeen:
    """One `get_agent_snapshot` answer: sent at `sent`, answered at `replied`."""

    sent: float
    replied: float
    session_id: str
    calls: tuple[ToolCallView, ...]
    results: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The tool results the same answer's session history holds, by call key."""


@dataclass(frozen=True)
class SendSeen:
    """One `send_user_message` of the reconcile job; `accepted` is None when no reply came."""

    sent: float
    replied: float | None
    session_id: str
    text: str
    accepted: bool | None


@dataclass(frozen=True)
class AskSeen:
    """An ask the session API acknowledged: the call is durable from `acked` on."""

    key: str
    session_id: str
    acked: float


@dataclass
class Observations:
    """Everything the clients saw in one chaos run."""

    entries: list[h.Entry] = field(default_factory=list)
    """PolicySet, SessionOpened, CallAsked and ReconcileRan, final already."""
    answers: list[AnswerSeen] = field(default_factory=list)
    events: list[EventSeen] = field(default_factory=list)
    snapshots: list[SnapshotSeen] = field(default_factory=list)
    sends: list[SendSeen] = field(default_factory=list)
    acked: list[AskSeen] = field(default_factory=list)
    final: dict[str, AgentSnapshot] = field(default_factory=dict)
    """Every session's snapshot once the run was quiescent."""
    operations: collections.Counter[str] = field(default_factory=collections.Counter)
    """Session API calls by kind, each try counted."""
    unavailable: int = 0
    """Calls whose answer never came (the server was down or restarting)."""
    errors: list[str] = field(default_factory=list)
    """What the engine did that no client call allows: an error reply to a valid request."""

    def count(self, kind: str) -> None:
        self.operations[kind] += 1
