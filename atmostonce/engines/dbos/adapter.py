"""The DBOS adapter: a variant's application processes behind the `Engine` protocol, so
`atmostonce chaos --engine atmostonce.engines.dbos:VARIANT` runs and hurts them like any
engine.

DBOS is a library: there is no server. A worker is an application process
(`python -m atmostonce.engines.dbos.worker`) that launched DBOS with an executor id; it runs the
session workflows it takes from the `sessions` queue, tools included. The durable state is the
SQLite system database, a file every process opens (plus the application's store, `store`).
What each fault means here:

- kill: SIGKILL to an application process, in the middle of whatever its workflows run. DBOS
  recovers a PENDING workflow only in a process with the same executor id and application
  version (without DBOS Conductor, which is a hosted service), so the next process the
  harness starts takes over the killed one's executor id, as a team's supervisor would
  restart it; on launch DBOS recovers its workflows (`WorkerDeclaredLost`);
- pause: SIGSTOP and later SIGCONT: the process's workflows wait (no other process takes a
  workflow whose executor is alive), and its runs go on when it wakes: nothing stops them;
- partition and restart: not injected (`Limits.no_target`): no server to cut a process off
  from or to restart; the processes reach only files on this machine and the ledger.

What the mapping cannot show is declared in `limits()` (`NOT_CHECKABLE`): those properties are
reported as not checkable, with the reason.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from contextlib import closing
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
from atmostonce.engines.appstore import AppStore
from atmostonce.engines.dbos.app import RECORDS, records_of
from atmostonce.engines.dbos.client import DBOSSessions
from atmostonce.engines.dbos.mapping import VARIANTS, ToolRun, Variant
from atmostonce.engines.dbos.server_log import server_log
from atmostonce.engines.guards import JOURNAL, hand_outs, journal_guard, results_delivered
from atmostonce.engines.process_workers import ProcessWorker, ProcessWorkers
from atmostonce.runtime.options import config_argv
from atmostonce.runtime.processes import start, stop_all
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PropertyId

READY = 60.0
"""Seconds an application process may take to import DBOS, launch it and serve."""
LAUNCHES = 5
"""Times a process that exits before it serves is started (`DBOSEngine._ready`)."""

NOT_CHECKABLE: dict[str, str] = {
    PropertyId.A_ONE_WORKER: "DBOS hands no attempt to a worker: the application process that "
    "runs the workflow runs the tool itself, so each run is an attempt of its own; a step DBOS "
    "runs again in another process after a crash shows as a second attempt (A-ONE-ATTEMPT), "
    "never as one attempt at two workers",
    PropertyId.A_CANCEL_ON_TIMEOUT: "the mapping gives a tool's step no timeout "
    "(`timeout_seconds` would stop waiting for a step, not the tool's run), so no attempt is "
    "ever timed out or cancelled",
    PropertyId.A_FENCE: "no fence (D-6): DBOS never gives up on a step that goes on, and the "
    "DBOS engine refuses --fence",
    PropertyId.S_DOUBLE_RUN: "the documented double run needs a call the engine gave up on "
    "while its tool ran; DBOS gives up on none (no run timeout)",
    PropertyId.S_LOST_BEFORE_HEARTBEAT: "DBOS has no heartbeats: nothing says that a step "
    "started",
    PropertyId.A_HEARD_KEEPS_ATTEMPT: "DBOS has no heartbeats and no server that declares a "
    "worker lost: a process runs its steps itself, and a killed one's workflows are recovered "
    "by the process that takes over its executor id",
    PropertyId.S_UNKNOWN_NEVER_RAN: "needs a server restart: DBOS has no server",
}
"""The properties DBOS cannot give evidence for, and why."""

NO_TARGET: dict[str, str] = {
    "partition": "DBOS has no server to cut an application process off from: its system "
    "database is a SQLite file on this machine, beside the effect ledger",
    "restart": "DBOS has no server to restart: its durable state is the SQLite system "
    "database, which each application process opens itself",
}
"""The nemesis kinds the engine offers nothing to, and why."""


@dataclass
class _Worker(ProcessWorker):
    notes: Path
    executor_id: str


class DBOSEngine(ProcessWorkers[_Worker]):
    """The application processes of one variant on loopback (see the module docstring)."""

    def __init__(self, setup: EngineSetup, variant: Variant) -> None:
        if setup.config.fence:
            raise SpecError("the DBOS engine has no fence (D-6): DBOS never gives up on a "
                            "step that goes on; run without --fence")
        self.setup = setup
        self.variant = variant
        self.token_file = setup.token_file or setup.workdir / "token"
        ensure_token(self.token_file)
        self.store = AppStore(setup.workdir / "app.db")
        self.store.setup()
        self.system_database = setup.workdir / "dbos.sqlite"
        self.guard = (journal_guard(setup.workdir / JOURNAL, setup.config)
                      if variant.tool_run is ToolRun.GUARDED else None)
        """The guard's journal the application processes share (`guarded`)."""
        super().__init__()
        self._count = 0
        self._orphans: list[_Worker] = []
        """Killed processes whose executor id no new process has taken over yet."""
        self.lost: list[tuple[float, str]] = []
        """(when, worker name) of each killed process whose executor id a new one took."""
        self._closed = False

    def describe(self) -> str:
        return (f"DBOS {version('dbos')} on a SQLite system database, the {self.variant.name} "
                f"variant ({self.variant.built_with}): tools run as {self.variant.tool_run.value} "
                "code, one workflow per session; application processes as workers")

    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers.values()]

    def limits(self) -> Limits:
        return Limits(dict(NOT_CHECKABLE), no_target=dict(NO_TARGET), pauses_stop_runs=False)

    def start(self) -> None:
        """Start the processes once the system database is in WAL mode, so a process paused
        in a write holds up the others' writes but not their reads; the first process
        creates DBOS's tables, the others then open them."""
        with closing(sqlite3.connect(self.system_database)) as db:
            db.execute("PRAGMA journal_mode=WAL")
        self.start_worker()
        launched = [self._launch() for _ in range(self.setup.workers - 1)]
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

    # -- application processes ------------------------------------------------------------------

    def _launch(self, again: _Worker | None = None) -> _Worker:
        """A new process: with `again`, in place of that one, which failed to launch, with its
        executor id; otherwise with a killed process's executor id when there is one."""
        self._count += 1
        wid = f"w{self._count}"
        taken = None if again is not None else self._orphans.pop(0) if self._orphans else None
        source = again or taken
        executor_id = source.executor_id if source is not None else f"executor-{wid}"
        notes = self.setup.workdir / f"{wid}.notes"
        log = self.setup.workdir / f"{self._count:03d}-worker.log"
        argv = [sys.executable, "-m", self.variant.worker, "--variant", self.variant.name,
                "--store", str(self.store.path), "--system-database", str(self.system_database),
                "--executor-id", executor_id, "--ledger", self.setup.ledger,
                "--token-file", str(self.token_file), "--name", wid, "--events", str(notes),
                *config_argv(self.setup.config)] + (["--migrate"] if self._count == 1 else [])
        if self.guard is not None:
            argv += ["--guard-journal", str(self.guard.journal.path)]
        process = start("worker", argv, log)
        worker = _Worker(WorkerRef(wid, (), process.pid), process, notes, executor_id)
        self._workers[wid] = worker
        if taken is not None:
            self.lost += [(time.monotonic(), name) for name in taken.ref.names]
        return worker

    def _ready(self, worker: _Worker) -> WorkerRef:
        """Wait for `worker` to serve; a process that exits before is started again, as a
        supervisor would, up to LAUNCHES times. (A process that exits after, such as one whose
        DBOS launch found the system database locked past SQLite's busy timeout, is a worker
        gone: the harness starts another, which takes over its executor id.)"""
        for launch in range(1, LAUNCHES + 1):
            try:
                worker.process.wait_ready(READY)
                break
            except SpecError:
                if worker.process.alive or launch == LAUNCHES:
                    raise
                del self._workers[worker.ref.id]
                worker = self._launch(again=worker)
        worker.ref = WorkerRef(worker.ref.id, tuple(worker.process.names), worker.process.pid)
        return worker.ref

    def start_worker(self) -> WorkerRef:
        return self._ready(self._launch())

    def _gone(self, worker: _Worker) -> None:
        """Keep a dead process's executor id for the next process started."""
        self._orphans.append(worker)

    # -- observation ----------------------------------------------------------------------------

    def client(self) -> SessionAPI:
        return DBOSSessions(self.store, self.system_database, self.setup.config)

    def durable_attempts(self) -> set[str]:
        """The attempts whose records a session's `records` event ever held: DBOS keeps each
        value an event took in `workflow_events_history`."""
        if not self.system_database.exists():
            return set()
        with closing(sqlite3.connect(self.system_database, timeout=30.0)) as db:
            try:
                values = db.execute("SELECT value FROM workflow_events_history WHERE key = ?",
                                    (RECORDS,)).fetchall()
            except sqlite3.OperationalError:
                return set()  # no process ever created DBOS's tables
        return {record.attempt for (value,) in values
                for record in records_of(json.loads(value)).values() if record.attempt}

    def server_log(self) -> ServerLog:
        notes = [w.notes for w in self._workers.values()]
        if self.guard is not None:
            return server_log(notes, self.store.approvals().values(), None, self.lost,
                              self.system_database,
                              [*hand_outs(self.guard), *results_delivered(self.guard)])
        return server_log(notes, self.store.approvals().values(), self.durable_attempts(),
                          self.lost, self.system_database)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        stop_all([w.process for w in self._workers.values()])


def engine_of(name: str, setup: EngineSetup) -> DBOSEngine:
    return DBOSEngine(setup, VARIANTS[name])
