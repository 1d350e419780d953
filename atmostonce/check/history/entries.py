"""What a recorded history of one run is made of: its entries, and the violations found in it.

A history is a sequence of typed entries, each with the harness's clock `at`, in the order
things happened. Positions (indexes into the sequence) name entries in violations. Entries are
values, never changed once recorded; they are plain slotted dataclasses rather than frozen ones
because a simulation records about ten per tool call and a frozen dataclass takes several times
as long to build. Three kinds of entry exist:

- what the harness did to the executor, or observed it do: `PolicySet`, `SessionOpened`,
  `CallAsked`, `ApprovalAnswered` (the answer and the executor's reply), `TimerStarted`
  (an attempt queued, a call waiting for approval), `TimerFired`, `HandedOut` (a `GoAhead`,
  whether a `Persist` naming its attempt and worker came first in the same batch, D-5, and
  whether it was sent before the server died),
  `Cancelled`, `StartDelivered`, `HeartbeatDelivered` and `ResultDelivered` (a worker's
  `Started`, `Heartbeat` or `Finished` reached the executor, at the executor's clock),
  `RecordPublished` (a `tool_call_finished` event), `SnapshotSeen` (a call's status in
  `get_agent_snapshot` changed, with its tool results in the same snapshot's history),
  `UserMessageSent` (with its reply), `ReconcileRan`;
- ground truth from the effect ledger, which the executor never sees: `RunStarted` (which
  worker really started which attempt, passing which idempotency key), `EffectApplied` (the
  service applied the write, or dropped a repeated key), `RunEnded` (returned, reported a
  failure, killed by a crash, or stopped by its worker when its lease ran out, D-12);
- faults: `WorkerConnected` (a fresh worker, at start or coming back), `WorkerCrashed`,
  `WorkerCut`, `WorkerHealed`, `WorkerDeclaredLost` (the executor's `DropWorker`),
  `ServerRestarted`.

`atmostonce.check.history.checkers` judges a history: a harness records its entries into a
`checkers.History`, which checks each as it arrives. A `HistoryViolation` names its property id
(atmostonce.spec.properties), the call's idempotency key, a one-line message and the positions
of the entries involved. `HandedOut.call` and `RunStarted.call` are the harness's own
attribution of an attempt to a call (the simulator reads it from the call's arguments); a
harness that has none passes the key the executor sent, and a wrong key can then only be caught
when it names no call at all.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields

from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import TimerKind
from atmostonce.spec.reconcile import never_reached
from atmostonce.spec.records import AttemptProgress
from atmostonce.spec.session import AgentSnapshot, MessageRole, ToolCallStatus, ToolCallView


class RunEnd(enum.Enum):
    """How a run of a tool ended at its worker, as the effect ledger saw it."""

    RETURNED = "returned"
    TOOL_FAILED = "tool_failed"
    KILLED = "killed"
    """The worker process crashed."""
    STOPPED = "stopped"
    """The worker was cut off longer than its lease and stopped the run (D-12)."""


@dataclass(slots=True, unsafe_hash=True)
class Entry:
    at: float


# -- what the harness did, or saw the executor do -----------------------------------------------


@dataclass(slots=True, unsafe_hash=True)
class PolicySet(Entry):
    tool: str
    policy: ToolPolicy | None
    hints: ToolHints | None


@dataclass(slots=True, unsafe_hash=True)
class SessionOpened(Entry):
    session_id: str
    default_effect: EffectClass | None
    hints_may_lower: bool | None = None
    """False for a session whose default framework metadata may not lower (D-22); None,
    left out of `describe`, for the default."""


@dataclass(slots=True, unsafe_hash=True)
class CallAsked(Entry):
    key: str
    session_id: str
    turn_id: str
    tool_call_id: str
    tool: str
    arguments: str
    approval_deadline: float | None = None
    """The call's own approval deadline, when the ask set one (D-32)."""
    taken_by: float | None = None
    """The latest moment the engine can have taken the ask (its acknowledgement reached the
    client), when a harness sees only the client's side of it; None: at `at`."""


@dataclass(slots=True, unsafe_hash=True)
class ApprovalAnswered(Entry):
    """A person's answer and the executor's reply to it (D-7)."""

    key: str
    approve: bool
    ok: bool
    text: str


@dataclass(slots=True, unsafe_hash=True)
class TimerStarted(Entry):
    """An attempt queued (QUEUE_TIMEOUT, subject the attempt) or a call waiting for approval
    (APPROVAL_DEADLINE); `key` is the call's."""

    kind: TimerKind
    subject: str
    key: str


@dataclass(slots=True, unsafe_hash=True)
class TimerFired(Entry):
    kind: TimerKind
    subject: str
    key: str


@dataclass(slots=True, unsafe_hash=True)
class HandedOut(Entry):
    """A `GoAhead`: the attempt goes to `worker`; `persisted_first` says a `Persist` naming the
    attempt and the worker came before it (D-5). `sent` is False when the server died after
    persisting the hand-out and before telling the worker: the attempt counts as reached all
    the same (D-5), though its tool never ran."""

    worker: str
    attempt: str
    key: str
    tool: str
    persisted_first: bool
    call: str
    sent: bool = True
    number: int = 0
    """The attempt's number as the engine's own history gives it (Temporal's
    ActivityTaskStarted.attempt), 0 when it gives none: a call whose attempt N was handed out
    made at least N attempts, even when the earlier ones left no trace."""


@dataclass(slots=True, unsafe_hash=True)
class Cancelled(Entry):
    worker: str
    attempt: str


@dataclass(slots=True, unsafe_hash=True)
class StartDelivered(Entry):
    worker: str
    attempt: str


@dataclass(slots=True, unsafe_hash=True)
class HeartbeatDelivered(Entry):
    """A worker's heartbeat for `attempt` reached the executor: it renews the worker's
    liveness (A-HEARD-KEEPS-ATTEMPT)."""

    worker: str
    attempt: str


@dataclass(slots=True, unsafe_hash=True)
class ResultDelivered(Entry):
    worker: str
    attempt: str
    ok: bool


@dataclass(slots=True, unsafe_hash=True)
class RecordPublished(Entry):
    key: str
    status: ToolCallStatus
    error: str


@dataclass(slots=True, unsafe_hash=True)
class SnapshotSeen(Entry):
    key: str
    status: ToolCallStatus
    error: str
    idempotency_key: str
    unreached: bool | None = None
    """True when the snapshot's attempt history of the call shows that no attempt reached a
    worker (D-30); None when it shows a reach or no history."""
    results: tuple[str, ...] | None = None
    """The tool results the same snapshot's session history holds for the call, in order;
    None when the harness did not read them (A-TOOL-RESULT)."""
    kept: tuple[EffectClass, bool, float | None] | None = None
    """The effect class, approval rule and approval deadline the snapshot says the call kept
    (TC-SNAP-1, D-32); None when the engine shows no policy."""
    progress: str | None = None
    """The first attempt of the snapshot's history whose progress is not the one the page
    names for how it ended (D-30); None when every one is, or there is no history."""


@dataclass(slots=True, unsafe_hash=True)
class UserMessageSent(Entry):
    session_id: str
    text: str
    ok: bool


@dataclass(slots=True, unsafe_hash=True)
class ReconcileRan(Entry):
    session_id: str
    reported: int
    crashed: bool


# -- ground truth: the effect ledger ----------------------------------------------------------


@dataclass(slots=True, unsafe_hash=True)
class RunStarted(Entry):
    run: int
    worker: str
    attempt: str
    key: str
    tool: str
    call: str


@dataclass(slots=True, unsafe_hash=True)
class EffectApplied(Entry):
    run: int
    key: str
    applied: bool
    """False when the service dropped a repeated idempotency key."""


@dataclass(slots=True, unsafe_hash=True)
class RunEnded(Entry):
    run: int
    end: RunEnd
    output: str | None = None
    """What the tool returned, or the failure it reported; None when the ledger does not say."""


# -- faults -------------------------------------------------------------------------------------


@dataclass(slots=True, unsafe_hash=True)
class WorkerConnected(Entry):
    worker: str


@dataclass(slots=True, unsafe_hash=True)
class WorkerCrashed(Entry):
    worker: str


@dataclass(slots=True, unsafe_hash=True)
class WorkerCut(Entry):
    worker: str


@dataclass(slots=True, unsafe_hash=True)
class WorkerHealed(Entry):
    worker: str


@dataclass(slots=True, unsafe_hash=True)
class WorkerDeclaredLost(Entry):
    worker: str


@dataclass(slots=True, unsafe_hash=True)
class ServerRestarted(Entry):
    journal_entries: int


@dataclass(frozen=True, slots=True)
class HistoryViolation:
    """A property broken by a history: its id, the call, what happened, and where."""

    property: str
    key: str
    message: str
    positions: tuple[int, ...]

    def line(self) -> str:
        where = ", ".join(f"#{p}" for p in self.positions)
        call = f" [{self.key}]" if self.key else ""
        return f"{self.property}{call}: {self.message} (history {where})"


def unreached_of(view: ToolCallView) -> bool | None:
    """`SnapshotSeen.unreached` for a call the snapshot shows: True for a recorded call whose
    history shows that no attempt reached a worker, which reconcile reports as not run (D-30)."""
    return True if view.status.final and never_reached(view) else None


def kept_of(view: ToolCallView) -> tuple[EffectClass, bool, float | None] | None:
    """`SnapshotSeen.kept`: what the snapshot says the call kept at ask time."""
    if view.effect is None or view.requires_approval is None:
        return None
    return view.effect, view.requires_approval, view.approval_deadline


def progress_of(view: ToolCallView) -> str | None:
    """`SnapshotSeen.progress`: the first attempt of the call's history whose progress is not
    what the page names for its end (D-30: NOT_STARTED for one that never reached a worker,
    NOT_COMPLETED for one lost or cancelled after it did, which a journal that kept no
    progress shows as UNSPECIFIED, none for one the tool answered)."""
    if not view.history:
        return None
    for attempt in view.attempts:
        end = attempt.end
        if end is None:
            continue
        named = AttemptProgress.of_end(end)
        if attempt.progress is not named and not (
                named is AttemptProgress.NOT_COMPLETED
                and attempt.progress is AttemptProgress.UNSPECIFIED):
            shown = attempt.progress.value if attempt.progress is not None else "no progress"
            return f"attempt {attempt.number} ended {end.value} and shows {shown}"
    return None


def tool_results(session_id: str, snapshot: AgentSnapshot) -> dict[str, tuple[str, ...]]:
    """The tool results a snapshot's session history holds, by the key of their call, in
    order (`SnapshotSeen.results`)."""
    found: dict[str, list[str]] = {}
    for message in snapshot.messages:
        if message.role is MessageRole.TOOL:
            key = f"{session_id}/{message.turn_id}/{message.tool_call_id}"
            found.setdefault(key, []).append(message.tool_output)
    return {key: tuple(texts) for key, texts in found.items()}


def describe(entry: Entry) -> str:
    """One readable line for an entry: its time, its kind and its fields."""
    parts = []
    for f in fields(entry):
        if f.name == "at":
            continue
        value = getattr(entry, f.name)
        if isinstance(value, enum.Enum):
            value = value.value
        elif isinstance(value, ToolPolicy):
            value = value.effect.value + (
                "" if value.requires_approval is None
                else "+approval" if value.requires_approval else "-approval")
        elif isinstance(value, ToolHints):
            value = ",".join(f"{f.name}={getattr(value, f.name)}" for f in fields(value)
                             if getattr(value, f.name) is not None) or "none"
        elif value is None or value == "":
            continue
        parts.append(f"{f.name}={value}")
    return f"{entry.at:10.3f}  {type(entry).__name__:<18} {' '.join(parts)}"
