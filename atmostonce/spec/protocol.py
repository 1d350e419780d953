"""The protocol between an executor under test and the harnesses that check it.

An executor is a deterministic, sans-IO state machine: a harness (the conformance checker, the
fault simulator, the real runtime) feeds it `Event`s and carries out the `Command`s it returns,
in order. It never reads a clock, opens a socket or starts a thread; time arrives inside
events, and timers are requests the harness fires later with `TimerFired`.

To check your own engine, write a factory `module:function` that takes an `ExecutorConfig` and
returns an object satisfying `Executor`, and run `atmostonce verify --executor module:function`.

The rules an executor must follow are the clauses of the Tool Calls page; the ones that shape
this protocol:

- Workers pull work: an attempt is handed out only in answer to `Poll`. The hand-out is
  persisted (`Persist` with the attempt and worker) before the `GoAhead` that follows it, and a
  worker starts the tool only on that go-ahead (D-5). Each attempt goes to one worker, ever.
- A worker's first message about an attempt is `Started`; the tool may have run before it
  arrives (TC-REC-LOST). While the tool runs the worker sends `Heartbeat`s.
- Every message from a worker restarts that worker's heartbeat timeout; when it fires the
  worker is lost: its attempts end as lost to their worker and the executor sends
  `DropWorker`. A worker cut off from the server stops its runs when its lease runs out, and
  the lease is shorter than the heartbeat timeout (D-12).
- `Cancel` is cooperative: the tool may run on and report later (`Finished` for an attempt
  that is no longer current), which never changes a record (TC-AMO-3, TC-REC-1).
- A restart builds a fresh executor and calls `recover` with every entry it persisted, in
  order; attempts handed out before the restart end as lost, queued ones stay queued (D-8).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.session import AgentSnapshot, ToolCallFinished

JSON = str | int | float | bool | None | list["JSON"] | dict[str, "JSON"]


# ---------------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class ExecutorConfig:
    """Options every executor takes. Durations are seconds of the harness's clock, finite and
    at least 0; `max_attempts` is a whole number of at least 1. An executor refuses options
    outside that range, or a lease no shorter than the heartbeat timeout, with a SpecError
    (the conformance layer probes it)."""

    max_attempts: int = 3
    """Attempts of a CallTool call (read, idempotent_write); CallSingleAttemptTool has one."""
    retry_backoff: float = 0.5
    """Delay before another attempt of a CallTool call."""
    queue_timeout: float = 30.0
    """An attempt no worker took within this time ends as never reached (schedule-to-start)."""
    run_timeout: float = 60.0
    """An attempt still out this long is cancelled; counted from the hand-out, and again from
    `Started` (start-to-close)."""
    heartbeat_timeout: float = 10.0
    """A worker silent this long is declared lost."""
    lease: float = 5.0
    """A worker cut off this long stops its runs; must be shorter than heartbeat_timeout."""
    approval_deadline: float = 300.0
    """A call waiting this long for a person is rejected, unless its ask or its tool's policy
    sets its own deadline (D-32)."""
    fence: bool = False
    """Decision D-6's option: a new attempt of a single-attempt tool waits while a run of the
    same tool that the executor gave up on may still be going."""
    cancel_records_failed: bool = False
    """Decision D-4's other choice: a single-attempt call whose attempt was cancelled or timed
    out after it reached a worker records failed, saying the tool may still be running
    (finding F-7), instead of outcome_unknown, which is the default and Dex's answer."""


# ---------------------------------------------------------------------------------------------
# Events: what the harness tells the executor. `at` is the harness's clock, in seconds.


@dataclass(frozen=True)
class Event:
    at: float


@dataclass(frozen=True)
class SetPolicy(Event):
    """Register a tool, or change its policy; calls already asked keep theirs (TC-SNAP-1)."""

    tool: str
    policy: ToolPolicy | None = None
    hints: ToolHints | None = None


@dataclass(frozen=True)
class OpenSession(Event):
    """A session opened with its default effect and its choice of D-22: whether framework
    metadata may lower that default (`hints_may_lower`, true unless the session says not)."""

    session_id: str
    default_effect: EffectClass | None = None
    hints_may_lower: bool = True


@dataclass(frozen=True)
class Ask(Event):
    """The agent's model asks for a tool call in a turn of a session."""

    session_id: str
    turn_id: str
    tool_call_id: str
    tool: str
    arguments: str = "{}"
    approval_deadline: float | None = None
    """The call's own approval deadline in seconds, if the ask sets one (D-32)."""


@dataclass(frozen=True)
class Answer(Event):
    """A person approves (`approve=True`) or rejects a call; answered with a `Reply`."""

    request: str
    key: str
    approve: bool


@dataclass(frozen=True)
class UserMessage(Event):
    """`send_user_message`: append a user message to the session; answered with a `Reply`."""

    request: str
    session_id: str
    text: str


@dataclass(frozen=True)
class Connected(Event):
    """A worker process connected: at start, as a fresh worker, or again after a server
    restart, when `running` lists the attempts whose runs it still has (going, or finished
    with a result not yet delivered); any other run the executor thought might go on at that
    worker is over."""

    worker: str
    running: tuple[str, ...] = ()


@dataclass(frozen=True)
class Poll(Event):
    """An idle worker asks for work; answered with `Persist` + `GoAhead`, or `NoWork`."""

    worker: str


@dataclass(frozen=True)
class Started(Event):
    """The worker got the go-ahead and started the tool: its first message about the attempt."""

    worker: str
    attempt: str


@dataclass(frozen=True)
class Heartbeat(Event):
    worker: str
    attempt: str


@dataclass(frozen=True)
class Finished(Event):
    """The tool returned (`ok`) or reported a failure. It may arrive for an attempt the
    executor already gave up on: then it only says the run is over."""

    worker: str
    attempt: str
    ok: bool
    output: str = ""


@dataclass(frozen=True)
class TimerFired(Event):
    timer: str


# ---------------------------------------------------------------------------------------------
# Commands: what the executor asks the harness to do, in order.


@dataclass(frozen=True)
class Command:
    pass


@dataclass(frozen=True)
class Persist(Command):
    """Make `entry` durable before carrying out any later command. `recover` gets them back."""

    entry: dict[str, JSON]


@dataclass(frozen=True)
class GoAhead(Command):
    """Tell the worker to start the attempt; the tool passes `key` to the service it writes to."""

    worker: str
    attempt: str
    key: str
    tool: str
    arguments: str
    lease: float


@dataclass(frozen=True)
class NoWork(Command):
    worker: str


@dataclass(frozen=True)
class Cancel(Command):
    """Ask the worker to stop the attempt; the tool may go on (cooperative cancellation)."""

    worker: str
    attempt: str


@dataclass(frozen=True)
class DropWorker(Command):
    """The executor declared the worker lost; the transport closes its connection."""

    worker: str


class TimerKind(enum.Enum):
    APPROVAL_DEADLINE = "approval_deadline"  # subject: the call's key
    QUEUE_TIMEOUT = "queue_timeout"  # subject: the attempt
    RUN_TIMEOUT = "run_timeout"  # subject: the attempt
    HEARTBEAT_TIMEOUT = "heartbeat_timeout"  # subject: the worker
    RETRY_BACKOFF = "retry_backoff"  # subject: the call's key


@dataclass(frozen=True)
class StartTimer(Command):
    """Fire `TimerFired(timer)` after `delay`, unless stopped; starting a running timer again
    restarts it."""

    timer: str
    delay: float
    kind: TimerKind
    subject: str
    key: str = ""
    """The key of the call the timer concerns, if any (harnesses map timers to calls by it;
    when empty, an attempt id is expected to start with the call's key and '#')."""


@dataclass(frozen=True)
class StopTimer(Command):
    """The timer will not fire; stopping a timer that is not running does nothing. Every
    harness fires a timer at most once per start and only while it runs, so an executor's
    handler for it never meets a stale one."""

    timer: str


@dataclass(frozen=True)
class Publish(Command):
    """An event on the session's AgentEvents stream."""

    event: ToolCallFinished


@dataclass(frozen=True)
class Reply(Command):
    """The answer to an `Answer` or `UserMessage` request."""

    request: str
    ok: bool
    text: str = ""


# ---------------------------------------------------------------------------------------------
# The executor under test


@runtime_checkable
class Executor(Protocol):
    """What an executor under test provides."""

    def handle(self, event: Event) -> list[Command]:
        """Take one event; return the commands to carry out, in order."""
        ...

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        """Rebuild from everything persisted before a restart, in order (D-8)."""
        ...

    def snapshot(self, session_id: str) -> AgentSnapshot:
        """`get_agent_snapshot`: the session's tool calls and message history."""
        ...


ExecutorFactory = Callable[[ExecutorConfig], Executor]
