"""The LangGraph adapter: a variant's agent processes behind the `Engine` protocol, so
`atmostonce chaos --engine atmostonce.engines.langgraph:VARIANT` runs and hurts them like any
engine.

LangGraph is a library: there is no server. The agent process is the worker
(`python -m atmostonce.engines.langgraph.worker`): it runs the graph for the threads it owns,
on one SQLite checkpoint file that every agent process shares, beside the application's store
(`store`), which the session API (`client`) writes and reads. What each fault means here:

- kill: SIGKILL to an agent process, in the middle of whatever its graphs run; the adapter, as
  the team's supervisor would, hands the dead process's threads to the others at once
  (`WorkerDeclaredLost`), and whichever takes one resumes it from its last checkpoint; the
  harness starts a new agent process in its place;
- pause: SIGSTOP and later SIGCONT: the process's threads wait (their owner is alive, so no
  other process takes them), and its runs go on when it wakes: nothing stops them;
- partition and restart: not injected (`Limits.no_target`): no server to cut a worker off
  from or to restart; the agent processes reach only files on this machine and the ledger.

What the mapping cannot show is declared in `limits()` (`NOT_CHECKABLE`): those properties are
reported as not checkable, with the reason.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from atmostonce.engines.adapter import (
    CutMode,
    EngineSetup,
    Limits,
    ServerLog,
    SessionAPI,
    WorkerRef,
)
from atmostonce.engines.guards import JOURNAL, hand_outs, journal_guard, results_delivered
from atmostonce.engines.langgraph.client import LangGraphSessions
from atmostonce.engines.langgraph.guarded import (
    GUARD_KIT,
    GuardedSessions,
    GuardInbox,
)
from atmostonce.engines.langgraph.mapping import VARIANTS, Variant
from atmostonce.engines.langgraph.server_log import server_log
from atmostonce.engines.langgraph.store import ThreadedStore
from atmostonce.engines.process_workers import ProcessWorker, ProcessWorkers
from atmostonce.runtime.options import config_argv
from atmostonce.runtime.processes import start, stop_all
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PropertyId

READY = 60.0
"""Seconds an agent process may take to import LangChain and serve."""
WORKER = "atmostonce.engines.langgraph.worker"
RELEASE_FOR = 120.0
"""Seconds the adapter keeps trying to hand a dead process's threads on while the store is
locked (by a paused agent process, until it is resumed)."""

NOT_CHECKABLE: dict[str, str] = {
    PropertyId.A_ONE_WORKER: "LangGraph hands no attempt to a worker: the agent process that "
    "runs the graph runs the tool itself, so each run is an attempt of its own; a task "
    "LangGraph runs again in another process after a crash shows as a second attempt "
    "(A-ONE-ATTEMPT), never as one attempt at two workers",
    PropertyId.A_CANCEL_ON_TIMEOUT: "the mapping has no run timeout: LangGraph gives a tool "
    "none (its node TimeoutPolicy would cancel every call of the node at once), so no attempt "
    "is ever timed out or cancelled",
    PropertyId.A_FENCE: "no fence (D-6): LangGraph never gives up on a run that goes on, and "
    "the LangGraph engine refuses --fence",
    PropertyId.S_DOUBLE_RUN: "the documented double run needs a call the engine gave up on "
    "while its tool ran; LangGraph gives up on none (no run timeout)",
    PropertyId.S_LOST_BEFORE_HEARTBEAT: "LangGraph has no heartbeats: nothing says that a "
    "tool started",
    PropertyId.A_HEARD_KEEPS_ATTEMPT: "LangGraph has no heartbeats and no server that declares "
    "a worker lost: the agent process runs its tools itself, and one that dies is simply "
    "resumed by another",
    PropertyId.S_UNKNOWN_NEVER_RAN: "needs a server restart: LangGraph has no server",
}
"""The properties LangGraph cannot give evidence for, and why."""

NO_TARGET: dict[str, str] = {
    "partition": "LangGraph has no server to cut an agent process off from: it reaches only "
    "files on this machine and the effect ledger",
    "restart": "LangGraph has no server to restart: its durable state is the checkpoint file",
}
"""The nemesis kinds the engine offers nothing to, and why."""


@dataclass
class _Worker(ProcessWorker):
    notes: Path


class LangGraphEngine(ProcessWorkers[_Worker]):
    """The agent processes of one variant on loopback (see the module docstring)."""

    def __init__(self, setup: EngineSetup, variant: Variant) -> None:
        if setup.config.fence:
            raise SpecError("the LangGraph engine has no fence (D-6): LangGraph never gives "
                            "up on a run that goes on; run without --fence")
        self.setup = setup
        self.variant = variant
        self.token_file = setup.token_file or setup.workdir / "token"
        ensure_token(self.token_file)
        self.store = ThreadedStore(setup.workdir / "app.db")
        self.store.setup()
        self.checkpoints = setup.workdir / "checkpoints.db"
        self.guard = (journal_guard(setup.workdir / JOURNAL, setup.config)
                      if variant.kit == GUARD_KIT else None)
        """The guard's journal the agent processes share (the guarded variant)."""
        super().__init__()
        self._count = 0
        self.lost: list[tuple[float, str]] = []
        """(when, worker name) of each dead process whose threads went to the others."""
        self._releasing: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def describe(self) -> str:
        v = self.variant
        return (f"LangGraph {version('langgraph')} with LangChain {version('langchain')}, the "
                f"{v.name} variant: {v.graph.value}, durability {v.durability.value!r}, "
                f"approvals by {v.approvals}, SQLite checkpoints; agent processes as workers")

    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers.values()]

    def limits(self) -> Limits:
        return Limits(dict(NOT_CHECKABLE), no_target=dict(NO_TARGET), pauses_stop_runs=False)

    def start(self) -> None:
        launched = [self._launch() for _ in range(self.setup.workers)]
        for worker in launched:
            self._ready(worker)

    # -- no server ------------------------------------------------------------------------------

    def kill_server(self) -> None:
        raise SpecError(NO_TARGET["restart"])

    def start_server(self) -> None:
        raise SpecError(NO_TARGET["restart"])

    def server_alive(self) -> bool:
        return True

    def cut(self, worker: WorkerRef, mode: CutMode) -> None:
        raise SpecError(NO_TARGET["partition"])

    def heal(self, worker: WorkerRef) -> None:
        raise SpecError(NO_TARGET["partition"])

    # -- agent processes ------------------------------------------------------------------------

    def _launch(self) -> _Worker:
        self._count += 1
        wid = f"w{self._count}"
        notes = self.setup.workdir / f"{wid}.notes"
        log = self.setup.workdir / f"{self._count:03d}-worker.log"
        argv = [sys.executable, "-m", WORKER, "--variant", self.variant.name,
                "--store", str(self.store.path), "--checkpoints", str(self.checkpoints),
                "--ledger", self.setup.ledger, "--token-file", str(self.token_file),
                "--name", wid, "--events", str(notes), *config_argv(self.setup.config)]
        if self.guard is not None:
            argv += ["--guard-journal", str(self.guard.journal.path)]
        process = start("worker", argv, log)
        worker = _Worker(WorkerRef(wid, (), process.pid), process, notes)
        self._workers[wid] = worker
        return worker

    def _ready(self, worker: _Worker) -> WorkerRef:
        worker.process.wait_ready(READY)
        worker.ref = WorkerRef(worker.ref.id, tuple(worker.process.names), worker.process.pid)
        return worker.ref

    def start_worker(self) -> WorkerRef:
        return self._ready(self._launch())

    def _gone(self, worker: _Worker) -> None:
        """Hand a dead process's threads to the others from a thread of its own: a
        paused agent process may hold the store's lock, and only this caller's thread resumes
        it."""
        releasing = threading.Thread(target=self._hand_on, args=(worker.ref,),
                                     name=f"release-{worker.ref.id}", daemon=True)
        releasing.start()
        self._releasing.append(releasing)

    def _hand_on(self, ref: WorkerRef) -> None:
        deadline = time.monotonic() + RELEASE_FOR
        while True:
            try:
                self.store.release(ref.names[0] if ref.names else ref.id)
                break
            except sqlite3.OperationalError:
                if time.monotonic() > deadline:
                    raise
        with self._lock:
            self.lost += [(time.monotonic(), name) for name in ref.names]

    # -- observation ----------------------------------------------------------------------------

    def client(self) -> SessionAPI:
        if self.guard is not None:
            return GuardedSessions(self.store, self.checkpoints, self.setup.config, self.guard)
        return LangGraphSessions(self.store, self.checkpoints, self.setup.config)

    def server_log(self) -> ServerLog:
        notes = [w.notes for w in self._workers.values()]
        if self.guard is not None:
            return server_log(notes, GuardInbox(self.guard).approvals().values(),
                              self.checkpoints, self.lost, hand_outs(self.guard),
                              results_delivered(self.guard))
        return server_log(notes, self.store.approvals().values(), self.checkpoints, self.lost)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        stop_all([w.process for w in self._workers.values()])
        for releasing in self._releasing:
            releasing.join(RELEASE_FOR)


def engine_of(name: str, setup: EngineSetup) -> LangGraphEngine:
    return LangGraphEngine(setup, VARIANTS[name])
