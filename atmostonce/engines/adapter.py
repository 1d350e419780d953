"""The black-box adapter: what a durable-execution engine implements so that `atmostonce chaos`
can run it on real processes, hurt it, and check what it did against the Tool Calls spec.

Writing an adapter for your engine
==================================

Write a factory `module:function` that takes an `EngineSetup` and returns an object with the
methods of `Engine`, and run `atmostonce chaos --engine module:function`. The harness then:

1. starts the effect ledger service itself (its ground truth: see "Where the tools write"),
   builds your engine with the setup, and calls `start()`;
2. runs agent sessions through `client()`: it sets tool policies, opens sessions, asks tool
   calls of the four demo tools (one per effect class), approves and rejects them, reads
   snapshots and the AgentEvents stream, and reconciles outcome_unknown calls with
   `send_user_message`;
3. meanwhile injects faults through the process-control methods: `kill_worker`,
   `pause_worker`/`resume_worker`, `cut`/`heal` a worker's connection, `kill_server` +
   `start_server`; and starts a replacement with `start_worker` whenever a worker is gone;
4. stops the faults, heals everything, lets every call reach a record, runs reconcile twice,
   calls `close()`, then reads `server_log()`, merges it with what its clients saw, the
   ledger and its own fault log into one history (`atmostonce.check.history.entries`) and runs the
   same checkers as the simulator on it.

The two halves of the adapter run on different threads: process control is called from the
harness's main thread (one call at a time; each returns when the change is done), the
`SessionAPI` returned by `client()` is used from the harness's asyncio event loop.

Where the tools write
---------------------

`EngineSetup.ledger` is the `HOST:PORT` of the effect ledger service
(`atmostonce.runtime.ledger` documents its wire format). Your workers must run the
four demo tools of `atmostonce.runtime.tools` and, like the runtime's worker, log each
run's start (`run_started`: worker, attempt, key, tool) and end (`run_ended`), and send each
write with the call's idempotency key (`write`). The ledger is the ground truth the checkers
judge records against: a `succeeded` needs a run that returned, "did not run" needs no run,
two overlapping runs of a single-attempt tool must have the documented shape (TC-AMO-4).
The simplest way is to start the runtime's worker (`python -m atmostonce.runtime
worker --server ... --ledger ...`) against your server, if it speaks the runtime's wire.

Times
-----

Every time an adapter reports (`at`) is `time.monotonic()` on this machine (CLOCK_MONOTONIC),
the clock the ledger and the harness read too, so the three can be merged into one history.

What only the server sees
-------------------------

`server_log()`, called after `close()`, returns the facts the harness cannot observe from
outside (`ServerLog`): each hand-out of an attempt to a worker, whether it was durable before
its go-ahead (D-5) and whether the go-ahead was sent; attempts queued; approvals the server
took and deadlines that fired; attempts cancelled or timed out; results that reached the
executor; workers it declared lost; and the moments it heard that a run ended. Hand-outs are
required: without them an outcome_unknown record cannot be told from a lie (A-UNKNOWN-REACHED).
The reference adapter (`atmostonce.engines.reference`) reads them from its server's journal and
from a TCP proxy it puts between each worker and the server.

What an engine cannot show
--------------------------

An engine may also have a method `limits()` returning `Limits` (the harness reads it with
`limits_of`, so an adapter without one keeps working):

- `not_checkable` maps a property id (`atmostonce.spec.properties`) to why the engine cannot
  give the evidence it needs, such as an earlier attempt's hand-out that its history does not
  keep. The report shows such a property as not checkable, with the reason, apart from the
  judged ones, never as passed; a violation the checkers still find for it on the evidence
  there is (which can miss, not invent) counts like any other.
- `attempts_survive_restart` says that a server restart does not end the attempts out at
  workers: they stay started, their timers run on, and a late result decides the call
  (Temporal). The checkers then judge a restart as a lost connection, not as the loss of
  every attempt out (D-8).
- `no_target` maps a kind of fault (`partition`, `restart`) to why the engine offers nothing
  it could hit, such as a library framework without a server: the harness does not inject
  it and says why in the report.
- `pauses_stop_runs` (true unless the engine says otherwise) says that a worker paused longer
  than the lease takes no effect past it (D-12): its writes are refused and it stops its runs
  on waking. An engine without a lease says false, and a paused run then ends only when a
  witness says so.
- `renewals_logged` (false unless the engine says otherwise) says that its `ServerLog` holds
  every message that renews a worker's lease, at a moment no earlier than the worker sent it:
  each hand-out, the worker's start, its heartbeats and reconnections. On such an engine whose
  pauses stop runs, a run takes no effect past a lease after the last of them, however the
  worker was kept from fencing itself (a process starved of the CPU as well as a paused one).

Disk faults
-----------

An engine may also have the methods of `DiskFaults`: with `EngineSetup.disk_faults` it starts
its server so that a fault of the disk under it (a failing fsync, a failing or full write) can
be turned on and off while it runs, and it says whether a server that is gone died of one. The
nemesis's `disk` kind uses them; an engine without them is not a target of `disk`.

Errors
------

A client call that cannot reach the server, or whose connection goes before the answer comes,
raises `ServerUnavailable`, `ConnectionError` or another `OSError`: the harness then treats
the call as indeterminate and asks again later (asks are idempotent by their ids). Any other
exception is a finding about the engine.

An engine whose server runs the executor under test (`EngineSetup.executor`) raises
`ExecutorFailure` from any process-control method once it knows that its server stopped because
that executor failed (raised, or answered outside the protocol): the harness then stops the run
and reports the failure with the server's log line, instead of restarting a server that will
only fail again. `server_log()` lists every such failure in `ServerLog.executor_failures`.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast, runtime_checkable

from atmostonce.check.executors.loading import load_callable
from atmostonce.check.history import entries as h
from atmostonce.runtime.client import AnswerReply, ServerUnavailable
from atmostonce.runtime.fiu import DiskFault
from atmostonce.runtime.wire import LOOPBACK
from atmostonce.spec.errors import SpecError, a_value_of
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.properties import PROPERTIES
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import AgentSnapshot, ToolCallFinished

DEFAULT_ENGINE = "atmostonce.engines.reference:engine"

UNAVAILABLE: tuple[type[BaseException], ...] = (ServerUnavailable, ConnectionError, OSError,
                                                TimeoutError)
"""What a client call raises when its outcome is unknown: the harness asks again later."""


class CutMode(enum.Enum):
    """How a worker's connection to the server is cut."""

    HOLD = "hold"
    """Nothing passes either way, nothing is lost: held traffic goes through when healed."""
    DROP = "drop"
    """Open connections are closed and new ones refused until healed."""


@dataclass(frozen=True)
class EngineSetup:
    """What the harness gives the engine's factory."""

    workdir: Path
    """A directory for the engine's files (journal, logs); the harness removes it, unless the
    executor under test failed (then it keeps it, for the logs)."""
    ledger: str
    """HOST:PORT of the effect ledger: where the engine's tools write with the call's key."""
    config: ExecutorConfig
    """The options the engine's executor runs with: timeouts, lease, the fence (D-6, D-12)."""
    workers: int
    """Worker processes to start with."""
    executor: str
    """MODULE:FACTORY of the executor the engine's server drives, for engines that take one
    (`atmostonce serve --executor`); others ignore it."""
    host: str = LOOPBACK
    token_file: Path | None = None
    """The effect ledger's token file (one line, mode 0600, `atmostonce.runtime.
    tokens`): what the engine's workers present to the ledger. The reference runtime's server
    takes the same token from its workers; None: the engine makes its own in `workdir`."""
    disk_faults: bool = False
    """Start the server so that disk faults can be injected into it (`--nemesis disk`); only
    an engine that has `DiskFaults` can."""


class ExecutorFailure(Exception):
    """The engine's server stopped because the executor under test failed: `line` is the
    server log's line that names the failure (the exception, or what the executor answered),
    `log` the log file it is in, `exception` the exception its traceback ends with when the
    line does not name it."""

    def __init__(self, line: str, log: Path | None = None, exception: str = "") -> None:
        self.line = line
        self.log = log
        self.exception = "" if exception in line else exception
        super().__init__(self.quoted() + ("" if log is None else f" (server log {log})"))

    def quoted(self) -> str:
        """The log line, and the exception when the line does not name it."""
        return f"{self.line} (raised {self.exception})" if self.exception else self.line

    def as_json(self) -> dict[str, str | None]:
        return {"line": self.line, "exception": self.exception or None,
                "log": None if self.log is None else str(self.log)}


@dataclass(frozen=True)
class WorkerRef:
    """One worker process, as the engine started it."""

    id: str
    """The harness's name for it in reports (w1, w2, ...)."""
    names: tuple[str, ...]
    """The worker names the engine's server and the ledger know it by."""
    pid: int | None = None


@dataclass(frozen=True)
class RunEndSeen:
    """The server (or the adapter on its wire) heard at `at` that the run of `attempt` at
    `worker` was over: an upper bound on when the run ended."""

    at: float
    worker: str
    attempt: str
    ok: bool | None = None
    """Whether the tool returned (True) or reported a failure (False), when known."""


@runtime_checkable
class DiskFaults(Protocol):
    """An engine whose server's disk can fail on command: the harness turns a fault on in the
    latest server process, off again, and asks whether a server that is gone stopped because of
    one (then it starts it again from its files, as the engine's operators would)."""

    def disk_fault(self, fault: DiskFault) -> None:
        """Turn `fault` on in the running server; SpecError when it cannot be reached."""

    def clear_disk_fault(self, fault: DiskFault) -> None:
        """Turn `fault` off again in the running server, if it still runs."""

    def died_of_disk_fault(self) -> bool:
        """Whether the latest server process is gone because its disk failed."""


@dataclass(frozen=True)
class Limits:
    """What an engine cannot show, and how its restarts differ (see the module docstring)."""

    not_checkable: Mapping[str, str] = field(default_factory=dict)
    """Property id -> why this engine cannot give the evidence the property needs."""
    attempts_survive_restart: bool = False
    no_target: Mapping[str, str] = field(default_factory=dict)
    """Kind of fault (a nemesis kind's value) -> why the engine offers nothing it could hit."""
    pauses_stop_runs: bool = True
    renewals_logged: bool = False
    held_by_mapping: Mapping[str, str] = field(default_factory=dict)
    """Property id -> what the adapter's own mapping adds that makes it hold here, where the
    engine alone breaks it: a pass names it, so no one reads it as the engine's guarantee."""


def limits_of(engine: object) -> Limits:
    """The engine's `limits()`, or no limits when it has no such method; SpecError for an
    answer that is not `Limits` or names a property the spec does not have."""
    method = getattr(engine, "limits", None)
    if method is None:
        return Limits()
    limits = method()
    if not isinstance(limits, Limits):
        raise SpecError(f"the engine's limits() returned {a_value_of(type(limits).__name__)}, not "
                        "atmostonce.engines.adapter.Limits")
    unknown = sorted((set(limits.not_checkable) | set(limits.held_by_mapping))
                     - set(PROPERTIES))
    if unknown:
        raise SpecError(f"the engine's limits() names properties the spec does not have: "
                        f"{', '.join(unknown)}")
    return limits


@dataclass
class ServerLog:
    """What only the engine's server saw (see the module docstring)."""

    entries: list[h.Entry] = field(default_factory=list)
    """History entries of these kinds, in time order: `HandedOut` (required), `TimerStarted`
    (QUEUE_TIMEOUT: an attempt queued), `TimerFired` (APPROVAL_DEADLINE), `ApprovalAnswered`
    (each answer the server accepted, at the moment it took it), `Cancelled`,
    `ResultDelivered`, `WorkerDeclaredLost`, `StartDelivered`, `WorkerConnected`,
    `HeartbeatDelivered` (each heartbeat the executor took, at its clock)."""
    run_ends: list[RunEndSeen] = field(default_factory=list)
    durable: list[float] = field(default_factory=list)
    """When each durable journal entry was written, if the engine has a journal."""
    notes: list[str] = field(default_factory=list)
    """Lines for the report: what the adapter could and could not observe."""
    executor_failures: list[ExecutorFailure] = field(default_factory=list)
    """Each time a server stopped because the executor under test failed."""


class SessionAPI(Protocol):
    """The session API the harness drives: the runtime's `AsyncClient` has exactly these."""

    async def set_policy(self, tool: str, policy: ToolPolicy | None = None,
                         hints: ToolHints | None = None) -> None: ...

    async def open_session(self, session_id: str,
                           default_effect: EffectClass | None = None) -> None: ...

    async def ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
                  arguments: str = "{}") -> str:
        """Returns the call's idempotency key once the call is durable."""
        ...

    async def approve(self, key: str) -> AnswerReply: ...

    async def reject(self, key: str) -> AnswerReply: ...

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot: ...

    async def send_user_message(self, session_id: str, text: str) -> bool: ...

    def events(self, session_id: str, past: bool = True) -> AsyncIterator[ToolCallFinished]:
        """The session's AgentEvents stream; with `past`, first the records made before."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class Engine(Protocol):
    """What an adapter implements (see the module docstring)."""

    def start(self) -> None:
        """Start the server and `setup.workers` workers; return when all serve."""
        ...

    def close(self) -> None:
        """Stop every process the engine started and make its durable state complete; safe to
        call twice and after a failed start."""
        ...

    def describe(self) -> str:
        """One line for the report: what runs, with which executor."""
        ...

    def pids(self) -> list[int]:
        """Every process the engine started, so the harness can prove none outlives it."""
        ...

    # -- the server -------------------------------------------------------------------------

    def kill_server(self) -> None:
        """Kill the server at once (SIGKILL); return when it is gone and every message the
        adapter got from it has been recorded."""
        ...

    def start_server(self) -> None:
        """Start the server again from its durable state, on the same address (D-8)."""
        ...

    def server_alive(self) -> bool: ...

    # -- workers ----------------------------------------------------------------------------

    def start_worker(self) -> WorkerRef:
        """One more worker process, connected when this returns."""
        ...

    def workers(self) -> list[WorkerRef]:
        """The worker processes started and not yet known to be gone."""
        ...

    def worker_alive(self, worker: WorkerRef) -> bool: ...

    def kill_worker(self, worker: WorkerRef) -> None:
        """SIGKILL; return when the process is gone."""
        ...

    def pause_worker(self, worker: WorkerRef) -> None:
        """SIGSTOP: the process stops where it is and keeps its connections."""
        ...

    def resume_worker(self, worker: WorkerRef) -> None:
        """SIGCONT."""
        ...

    def cut(self, worker: WorkerRef, mode: CutMode) -> None:
        """Cut the worker's connection to the server (see `CutMode`)."""
        ...

    def heal(self, worker: WorkerRef) -> None: ...

    # -- observation ------------------------------------------------------------------------

    def client(self) -> SessionAPI:
        """A new session client for the harness's event loop; it connects on first use."""
        ...

    def server_log(self) -> ServerLog:
        """After `close()`: what only the server saw."""
        ...


EngineFactory = Callable[[EngineSetup], Engine]

def load_engine(path: str) -> EngineFactory:
    """The engine factory at `path`; SpecError for a bad path (see `load_callable`)."""
    return cast(EngineFactory, load_callable(path, "engine", DEFAULT_ENGINE))


def built(factory: EngineFactory, setup: EngineSetup, path: str) -> Engine:
    """The engine `factory` builds for `setup`, checked against the `Engine` protocol."""
    try:
        engine = factory(setup)
    except SpecError:
        raise
    except Exception as error:
        raise SpecError(f"engine factory {path!r} failed: {type(error).__name__}: "
                        f"{error}") from None
    if not isinstance(engine, Engine):
        missing = [name for name in _METHODS if not callable(getattr(engine, name, None))]
        raise SpecError(f"engine factory {path!r} returned {a_value_of(type(engine).__name__)}, "
                        "which is no atmostonce.engines.adapter.Engine (missing: "
                        f"{', '.join(missing)})")
    return engine


_METHODS: Sequence[str] = (
    "start", "close", "describe", "pids", "kill_server", "start_server", "server_alive",
    "start_worker", "workers", "worker_alive", "kill_worker", "pause_worker", "resume_worker",
    "cut", "heal", "client", "server_log",
)
