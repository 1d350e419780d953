"""The executor's tables: sessions, calls, live attempts, the queue, workers and abandoned runs.

Pure bookkeeping: the primitives here keep the indexes consistent and decide nothing. The rules
live in the rule modules `core` joins (what happens on each event) and in `atmostonce.spec`
(what each rule says); `recovery` folds a journal into these same tables.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.policy import EffectClass, EffectivePolicy, ToolHints, ToolPolicy
from atmostonce.spec.protocol import NoWork, StartTimer
from atmostonce.spec.records import AttemptEnd, Outcome
from atmostonce.spec.session import Message


class Phase(enum.Enum):
    """Where one attempt stands; an attempt counts as reached from HANDED on (D-5)."""

    QUEUED = "queued"
    HANDED = "handed"
    STARTED = "started"
    ENDED = "ended"

    # Members are singletons compared by identity, so the identity hash agrees with equality;
    # it is computed in C, where Enum's own hashes the name in Python on every table lookup.
    __hash__ = object.__hash__


# D-5, TC-AMO-1: (phase, trigger) -> next phase. An attempt is handed once, to one worker; only a
# queued attempt can end without reaching one.
ATTEMPT_TABLE: Mapping[tuple[Phase, str], Phase] = {
    (Phase.QUEUED, "hand"): Phase.HANDED,
    (Phase.HANDED, "start"): Phase.STARTED,
    (Phase.QUEUED, "end"): Phase.ENDED,
    (Phase.HANDED, "end"): Phase.ENDED,
    (Phase.STARTED, "end"): Phase.ENDED,
}

# TC-REC-LOST, TC-AMO-3: the ends each live phase admits. Only a queued attempt ends not reached;
# a handed one may be running before its `Started` arrives, so it can be cancelled too.
ENDS_FROM: Mapping[Phase, frozenset[AttemptEnd]] = {
    Phase.QUEUED: frozenset({AttemptEnd.NOT_REACHED}),
    Phase.HANDED: frozenset(
        {AttemptEnd.RETURNED, AttemptEnd.TOOL_FAILED, AttemptEnd.WORKER_LOST,
         AttemptEnd.CANCELLED}
    ),
    Phase.STARTED: frozenset(
        {AttemptEnd.RETURNED, AttemptEnd.TOOL_FAILED, AttemptEnd.WORKER_LOST,
         AttemptEnd.CANCELLED}
    ),
    Phase.ENDED: frozenset(),
}


def attempt_id(key: str, number: int) -> str:
    """The id of attempt `number` (from 1) of the call with idempotency key `key`."""
    return f"{key}#{number}"


@dataclass(slots=True, eq=False)
class Session:
    """A session (Flow): its default effect, its calls in ask order and its message history."""

    session_id: str
    default_effect: EffectClass | None
    hints_may_lower: bool = True
    """D-22: whether framework metadata may lower the default effect."""
    calls: list[Call] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class Call:
    """One tool call: what the model asked, the policy it keeps from ask time (TC-SNAP-1), its
    approval state, its attempts so far, and its record once written (TC-REC-1)."""

    key: str
    session: Session
    turn_id: str
    tool_call_id: str
    tool: str
    arguments: str
    policy: EffectivePolicy
    asked_at: float
    approval: ApprovalState
    approval_deadline: float | None = None
    """The deadline the call kept from ask time (D-32); None: the executor's setting."""
    attempts_made: int = 0
    current: Attempt | None = None
    reached: bool = False
    """Whether an ended attempt of the call had reached a worker."""
    backoff: bool = False
    """Waiting for the retry backoff before the next attempt is queued."""
    pending: Outcome | None = None
    """The final decision whose record is not written yet (only between a journal's entries)."""
    pending_output: str = ""
    outcome: Outcome | None = None
    output: str = ""
    history: list[Attempt] = field(default_factory=list)
    """Every attempt of the call, in order, ended ones too: the Flow's history (D-30)."""


@dataclass(slots=True, eq=False)
class Attempt:
    """One attempt of a call; its id is the same wherever it goes, and it goes to one worker."""

    id: str
    call: Call
    number: int
    phase: Phase = Phase.QUEUED
    worker: str | None = None
    end: AttemptEnd | None = None
    run_timer: StartTimer | None = None
    """The command that starts its run timeout, made at the hand-out and sent again at
    `Started`: commands are values, so one serves both."""
    queued_at: float = 0.0
    handed_at: float | None = None
    started_at: float | None = None
    """When its `Started` reached this executor; not journaled, so unknown after a restart."""
    ended_at: float | None = None


@dataclass(slots=True, eq=False)
class Worker:
    """A worker that is up, as far as the executor knows, and the attempt it holds, if any."""

    name: str
    heartbeat: StartTimer
    """The command that restarts its heartbeat timeout: the same on every message."""
    no_work: NoWork
    holding: Attempt | None = None


@dataclass(slots=True, eq=False)
class Registered:
    """What SetPolicy registered for a tool: its policy and its framework hints."""

    policy: ToolPolicy | None
    hints: ToolHints | None


class ExecutorState:
    """Every table the executor keeps, indexed by id so that an event touches only its own rows."""

    __slots__ = ("abandoned", "abandoned_at", "abandoned_of_tool", "calls", "live", "policies",
                 "queue", "sessions", "workers")

    def __init__(self) -> None:
        self.policies: dict[str, Registered] = {}
        self.sessions: dict[str, Session] = {}
        self.calls: dict[str, Call] = {}
        self.live: dict[str, Attempt] = {}
        """Attempts not ended yet, by id."""
        self.queue: dict[str, Attempt] = {}
        """Queued attempts, oldest first."""
        self.workers: dict[str, Worker] = {}
        """Workers that are up; a worker declared lost or never seen is absent."""
        self.abandoned: dict[str, tuple[str, str]] = {}
        """Runs the executor gave up on that may still go on: attempt id -> (worker, tool)."""
        self.abandoned_of_tool: dict[str, int] = {}
        self.abandoned_at: dict[str, set[str]] = {}

    @property
    def empty(self) -> bool:
        return not (self.policies or self.sessions or self.calls or self.workers)

    # -- attempts ---------------------------------------------------------------------------------

    def new_attempt(self, call: Call, at: float) -> Attempt:
        """Queue the call's next attempt, numbered from 1."""
        number = call.attempts_made + 1
        attempt = Attempt(attempt_id(call.key, number), call, number, queued_at=at)
        call.history.append(attempt)
        call.attempts_made = number
        call.current = attempt
        call.backoff = False
        self.live[attempt.id] = attempt
        self.queue[attempt.id] = attempt
        return attempt

    def hand(self, attempt: Attempt, worker: str, at: float) -> None:
        """The attempt goes to `worker`: from now on it counts as reached (D-5)."""
        del self.queue[attempt.id]
        attempt.phase = ATTEMPT_TABLE[(attempt.phase, "hand")]
        attempt.worker = worker
        attempt.handed_at = at
        holder = self.workers.get(worker)
        if holder is not None:
            holder.holding = attempt

    def requeue(self, attempt: Attempt) -> None:
        """Put a handed attempt back in the queue under the same id (only a mutant does this)."""
        self.release(attempt)
        attempt.phase = Phase.QUEUED
        attempt.worker = None
        attempt.handed_at = attempt.started_at = None
        self.queue[attempt.id] = attempt

    def end(self, attempt: Attempt, end: AttemptEnd, at: float) -> None:
        """The attempt ended: it leaves the live tables and its worker no longer holds it."""
        attempt.phase = ATTEMPT_TABLE[(attempt.phase, "end")]
        attempt.end = end
        attempt.ended_at = at
        self.live.pop(attempt.id, None)
        self.queue.pop(attempt.id, None)
        self.release(attempt)

    def release(self, attempt: Attempt) -> None:
        if attempt.worker is not None:
            holder = self.workers.get(attempt.worker)
            if holder is not None and holder.holding is attempt:
                holder.holding = None

    # -- abandoned runs (TC-AMO-3, D-6) ---------------------------------------------------------

    def abandon(self, attempt: Attempt) -> None:
        """Remember that the run of `attempt` may go on at its worker after it ended."""
        worker = attempt.worker
        assert worker is not None
        tool = attempt.call.tool
        self.abandoned[attempt.id] = (worker, tool)
        self.abandoned_of_tool[tool] = self.abandoned_of_tool.get(tool, 0) + 1
        self.abandoned_at.setdefault(worker, set()).add(attempt.id)

    def run_over(self, attempt: str, worker: str) -> bool:
        """The abandoned run of `attempt` at `worker` is over; False when there was none."""
        found = self.abandoned.get(attempt)
        if found is None or found[0] != worker:
            return False
        del self.abandoned[attempt]
        tool = found[1]
        left = self.abandoned_of_tool[tool] - 1
        if left:
            self.abandoned_of_tool[tool] = left
        else:
            del self.abandoned_of_tool[tool]
        at = self.abandoned_at[worker]
        at.discard(attempt)
        if not at:
            del self.abandoned_at[worker]
        return True

    def runs_over_at(self, worker: str) -> bool:
        """Every abandoned run at `worker` is over; False when there was none."""
        attempts = self.abandoned_at.get(worker)
        if not attempts:
            return False
        for attempt in list(attempts):
            self.run_over(attempt, worker)
        return True
