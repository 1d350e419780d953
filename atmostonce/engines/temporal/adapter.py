"""The Temporal adapter: the mapping's processes behind the `Engine` protocol, so `atmostonce
chaos --engine atmostonce.engines.temporal:engine` runs and hurts them like any engine.

It starts the Temporal dev server on a SQLite file in the setup's directory
(`dev_server.DevServer`), one worker process for the session workflows straight on the server,
and the tool worker processes (`worker.py tools`), each through a `Proxy` of its own so its
connection can be held or dropped. Killing the server is SIGKILL; starting it again reuses the
file and the ports. Before the processes stop, `close()` reads every workflow's history and its
pending activities, from which `server_log()` builds what the server saw, with the workers'
events files (`server_log`).

What Temporal cannot show is declared in `limits()`: those properties are reported as not
checkable, with the reason. Temporal also keeps an attempt across a server restart (the
activity stays started, its timers run on, a late result is taken), so the adapter declares
that too, and the checkers judge a restart as a lost connection rather than a lost attempt.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from atmostonce.engines.adapter import (
    EngineSetup,
    Limits,
    ServerLog,
    SessionAPI,
    WorkerRef,
)
from atmostonce.engines.proxied import ProxiedWorker, ProxiedWorkers
from atmostonce.engines.proxy import Proxy
from atmostonce.engines.temporal import mapping, process
from atmostonce.engines.temporal.client import TemporalSessions, connect
from atmostonce.engines.temporal.dev_server import DevServer
from atmostonce.engines.temporal.payloads import Settings, settings_of
from atmostonce.engines.temporal.server_log import (
    TOOL_ACTIVITY,
    Activities,
    Fetched,
    server_log,
)
from atmostonce.runtime.processes import Managed, start, stop_all
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PropertyId

READY = 30.0
"""Seconds a worker process may take to connect and poll."""
READ_HISTORIES = 60.0
"""Seconds reading every workflow's history at the end may take."""
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 10.0

LEASE_HOLDS: dict[str, str] = {
    PropertyId.A_NO_ATTEMPT_AFTER_UNKNOWN: "only with the mapping's worker lease: Temporal "
    "alone delivers a task held on a cut connection after its call was recorded "
    "outcome_unknown, and the tool runs (T-1 in docs/engines.md)",
    PropertyId.A_DOUBLE_RUN_SHAPE: "only with the mapping's worker lease: Temporal does nothing "
    "to stop a cut-off worker, whose write lands after the call's outcome_unknown (T-4)",
}
"""The properties the Temporal mapping keeps by its lease (D-12), not Temporal by itself: the
`no-lease` cases of `tests/engines/test_temporal_findings.py` break them."""

NOT_CHECKABLE: dict[str, str] = {
    PropertyId.A_ONE_WORKER: "Temporal's history keeps only the last attempt's "
    "ActivityTaskStarted event; an earlier attempt's hand-out is known only from the worker's own "
    "note, and a worker killed before it noted the task leaves no trace of it",
    PropertyId.A_FENCE: "the mapping has no fence (D-6): Temporal offers none, and the Temporal "
    "engine refuses --fence",
    PropertyId.S_READ_RETRY_AFTER_LOSS: "Temporal retries inside the server: how an earlier "
    "attempt ended (its worker lost, a timeout) is in no history, so a retry after a loss cannot "
    "be told from one after a timeout",
    PropertyId.S_LOST_BEFORE_HEARTBEAT: "Temporal's history records no heartbeat, and no end of "
    "an earlier attempt",
    PropertyId.A_HEARD_KEEPS_ATTEMPT: "Temporal's event history has no heartbeat event (only "
    "ActivityTaskTimedOut with the HEARTBEAT timeout type when one is missed); the last "
    "heartbeat's time is shown only for a pending activity (DescribeWorkflowExecution), gone "
    "once the attempt ends; a worker learns only that a heartbeat was answered, on its own "
    "clock, so when the server took a heartbeat is in no record",
    PropertyId.A_CANCEL_ON_TIMEOUT: "the history records a start-to-close timeout but not "
    "whether the worker running the activity was told to stop: the SDK hands such a cancel to "
    "the activity with the reason timed_out, and the mapping's workers do not note it",
}
"""The properties this engine cannot give evidence for, and why."""


@dataclass
class _Worker(ProxiedWorker):
    events: Path


class TemporalEngine(ProxiedWorkers[_Worker]):
    """The Temporal dev server and the mapping's workers on loopback (see the module
    docstring)."""

    loop_name = "atmostonce-temporal"
    worker_module = "atmostonce.engines.temporal.worker"
    """The module the worker processes run (another mapping on Temporal names its own)."""
    activities: Activities = TOOL_ACTIVITY
    """How the server log finds the calls among the histories' activities."""

    def __init__(self, setup: EngineSetup, variant: mapping.Variant = mapping.PAGE,
                 slots: int = 1) -> None:
        """`slots`: activities each tool worker runs at a time (the chaos harness's workers
        run one, like the runtime's)."""
        super().__init__()
        if setup.config.fence:
            raise SpecError("the Temporal engine has no fence (D-6): Temporal offers none and "
                            "the mapping adds none; run without --fence")
        self.setup = setup
        self.variant = variant
        self.slots = slots
        self.settings: Settings = settings_of(setup.config, variant.name,
                                              variant.retry_every_class)
        self.token_file = setup.token_file or setup.workdir / "token"
        ensure_token(self.token_file)
        self.server = DevServer(setup.workdir, setup.host)
        self.offset = _clock_offset()
        self.sessions: Managed | None = None
        self.started: list[Managed] = []
        self._count = 0
        self._opened: set[str] = set()
        self._wedged: dict[str, str] = {}
        """The sessions a query found no longer replaying, each with the first such error."""
        self._histories: list[Fetched] = []
        self._read = False
        self._unread = ""
        """Why the histories could not be read at the end, if they could not."""
        self._closed = False

    def describe(self) -> str:
        lease = "with" if self.variant.lease else "WITHOUT"
        return (f"Temporal (dev server {self.server.address} on SQLite), the {self.variant.name} "
                f"mapping: a workflow per session, an activity per tool call, tool workers each "
                f"behind a TCP proxy, {lease} the workers' lease")

    def pids(self) -> list[int]:
        return [*self.server.pids(), *(p.pid for p in self.started)]

    def limits(self) -> Limits:
        return Limits(dict(NOT_CHECKABLE), attempts_survive_restart=True,
                      held_by_mapping=dict(LEASE_HOLDS) if self.variant.lease else {})

    def start(self) -> None:
        self.server.start()
        self.sessions = self._spawn("sessions", ["sessions", "--server", self.server.address])
        self._wait_ready(self.sessions)
        control = TemporalSessions(self.server.address, self.settings)
        self.loop.run(control.start_registry(), timeout=READY)
        launched = [self._launch() for _ in range(self.setup.workers)]
        for worker in launched:
            self._ready(worker)

    def _spawn(self, role: str, args: list[str]) -> Managed:
        log = self.setup.workdir / f"{len(self.started) + 1:03d}-{role}.log"
        started = start(role, process.python_module(self.worker_module, *args), log)
        self.started.append(started)
        return started

    @staticmethod
    def _wait_ready(started: Managed) -> None:
        started.wait_ready(READY)

    # -- the server ------------------------------------------------------------------------

    def kill_server(self) -> None:
        self.server.kill()

    def start_server(self) -> None:
        self.server.start()

    def server_alive(self) -> bool:
        return self.server.alive

    # -- workers ---------------------------------------------------------------------------

    def _launch(self) -> _Worker:
        proxy = Proxy((self.setup.host, self.server.port))
        port = self.loop.run(proxy.start(self.setup.host), timeout=10.0)
        self._count += 1
        wid = f"w{self._count}"
        events = self.setup.workdir / f"{wid}.events"
        started = self._spawn("worker", self._worker_args(f"{self.setup.host}:{port}", wid,
                                                          events))
        worker = _Worker(WorkerRef(wid, (), started.pid), started, proxy, events)
        self._workers[wid] = worker
        return worker

    def _worker_args(self, server: str, wid: str, events: Path) -> list[str]:
        """The command line of tool worker `wid`, reaching the server at `server`."""
        args = ["tools", "--server", server, "--ledger", self.setup.ledger,
                "--token-file", str(self.token_file), "--name", wid, "--events", str(events),
                "--lease", repr(self.setup.config.lease), "--slots", str(self.slots)]
        if not self.variant.lease:
            args.append("--no-lease")
        return args

    def _ready(self, worker: _Worker) -> WorkerRef:
        self._wait_ready(worker.process)
        worker.ref = WorkerRef(worker.ref.id, tuple(worker.process.names), worker.process.pid)
        return worker.ref

    def start_worker(self) -> WorkerRef:
        return self._ready(self._launch())

    # -- observation -----------------------------------------------------------------------

    def client(self) -> SessionAPI:
        return TemporalSessions(self.server.address, self.settings,
                                connect_timeout=CONNECT_TIMEOUT,
                                request_timeout=REQUEST_TIMEOUT, opened=self._opened.add,
                                wedged=self._wedge)

    def _wedge(self, session_id: str, line: str) -> None:
        self._wedged.setdefault(session_id, line)

    def server_log(self) -> ServerLog:
        log = server_log(self._histories, [w.events for w in self._workers.values()],
                         self.offset, self.activities)
        if not self._read:
            log.notes.append(f"the workflow histories could not be read at the end "
                             f"({self._unread or 'the run stopped first'}): the server log "
                             "holds only the workers' notes")
        log.notes.extend(wedged_notes(self._wedged))
        return log

    async def _read_histories(self) -> list[Fetched]:
        client = await connect(self.server.address)
        ids = set(self._opened)
        async for execution in client.list_workflows():
            ids.add(execution.id)
        ids.discard(mapping.REGISTRY_ID)
        fetched = []
        for workflow_id in sorted(ids):
            handle = client.get_workflow_handle(workflow_id)
            history = await handle.fetch_history()
            described = await handle.describe()
            fetched.append(Fetched(workflow_id, list(history.events),
                                   list(described.raw_description.pending_activities)))
        return fetched

    # -- stopping --------------------------------------------------------------------------

    def close(self) -> None:
        """Tool workers first, then the histories are read from the server (started again if
        it is down), then the session worker and the server; SIGKILL for anything still there
        after the grace period."""
        if self._closed:
            return
        self._closed = True
        try:
            stop_all([w.process for w in self._workers.values()])
            self._read_all()
        finally:
            stop_all(self.started)
            self.server.stop()
            if self._loop is not None:
                proxies = [w.proxy for w in self._workers.values()]

                async def close_all() -> None:
                    for proxy in proxies:
                        await proxy.close()

                try:
                    self._loop.run(close_all(), timeout=10.0)
                finally:
                    self._loop.close()

    def _read_all(self) -> None:
        try:
            self.server.start()
            self._histories = self.loop.run(self._read_histories(), timeout=READ_HISTORIES)
            self._read = True
        except (SpecError, TimeoutError, OSError, RuntimeError) as error:
            self._histories = []
            self._unread = f"{type(error).__name__}: {error}"


def _clock_offset() -> float:
    """This machine's wall clock minus its monotonic clock, to put the server's event times on
    the monotonic clock: the smallest of a few readings, each taken between two monotonic
    reads."""
    best = (float("inf"), 0.0)
    for _ in range(5):
        before = time.monotonic()
        wall = time.time()
        after = time.monotonic()
        best = min(best, (after - before, wall - (before + after) / 2))
    return best[1]


def engine(setup: EngineSetup) -> TemporalEngine:
    """The Temporal adapter's factory: `--engine atmostonce.engines.temporal:engine`."""
    return TemporalEngine(setup)


def wedged_notes(wedged: dict[str, str]) -> list[str]:
    """One report line per session the engine wedged: a finding about the engine (Temporal's
    SDK), reported even when the worker holding the run carried the session on (P-7)."""
    return [f"engine finding: Temporal wedged {line}; only a worker still holding the run in "
            f"its cache can carry the session on" for _, line in sorted(wedged.items())]
