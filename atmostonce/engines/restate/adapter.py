"""The Restate adapter: the mapping's processes behind the `Engine` protocol, so `atmostonce
chaos --engine atmostonce.engines.restate:engine` runs and hurts them like any engine.

It starts the Restate server (`server.RestateServer`, its base directory in the setup's
directory), the worker processes that serve the mapping's services (`worker`), each behind a
`Proxy` of its own so its connection can be held or dropped, and a `Router` in front of them
whose address is the one deployment Restate knows. The "workers" are these service processes:
Restate invokes them, and the `ctx.run` closures, where the tools run, run in them. The
"server" is `restate-server`: killing it is SIGKILL, starting it again reuses its directory
and ports. Before the processes stop, `close()` reads the tool runs of Restate's journal over
the admin SQL API, from which `server_log()` builds what the server saw, with the workers'
events files.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atmostonce.engines.adapter import EngineSetup, Limits, ServerLog, SessionAPI, WorkerRef
from atmostonce.engines.proxied import ProxiedWorker, ProxiedWorkers
from atmostonce.engines.proxy import Proxy
from atmostonce.engines.restate.client import RestateSessions
from atmostonce.engines.restate.router import Router
from atmostonce.engines.restate.server import RestateServer, free_port
from atmostonce.engines.restate.server_log import JOURNAL_QUERY, server_log
from atmostonce.runtime.processes import Managed, start, stop_all
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PropertyId

READY = 30.0
"""Seconds a worker process may take to serve."""
REQUEST_TIMEOUT = 10.0

NOT_CHECKABLE: dict[str, str] = {
    PropertyId.A_FENCE: "the mapping has no fence (D-6): Restate offers none, and the Restate "
    "engine refuses --fence",
    PropertyId.A_HEARD_KEEPS_ATTEMPT: "Restate has no heartbeats: the server judges a worker by "
    "its HTTP/2 stream and the inactivity timeout, and records neither",
    PropertyId.S_LOST_BEFORE_HEARTBEAT: "Restate has no heartbeats to lose a worker before",
    PropertyId.A_CANCEL_ON_TIMEOUT: "Restate has no run timeout: a ctx.run closure is never "
    "cancelled for taking long (only the whole invocation, after the inactivity and abort "
    "timeouts, which Restate's journal does not record)",
    PropertyId.S_READ_RETRY_AFTER_LOSS: "Restate's journal keeps one Run command per ctx.run "
    "and records no end of an earlier attempt, so a retry after a lost worker cannot be told "
    "from one after a failure the closure raised",
}
"""The properties this engine cannot give evidence for, and why."""


@dataclass
class _Worker(ProxiedWorker):
    events: Path
    port: int


class RestateEngine(ProxiedWorkers[_Worker]):
    """The Restate server and the mapping's workers on loopback (see the module docstring)."""

    loop_name = "atmostonce-restate"

    def __init__(self, setup: EngineSetup) -> None:
        super().__init__()
        if setup.config.fence:
            raise SpecError("the Restate engine has no fence (D-6): Restate offers none and "
                            "the mapping adds none; run without --fence")
        self.setup = setup
        self.token_file = setup.token_file or setup.workdir / "token"
        ensure_token(self.token_file)
        self.server = RestateServer(setup.workdir, setup.host,
                                    max(1.0, setup.config.heartbeat_timeout))
        self.router = Router(self._targets)
        self.router_port = 0
        self.offset = _clock_offset()
        self.started: list[Managed] = []
        self._count = 0
        self._journal: list[dict[str, Any]] = []
        self._unread = "the run stopped first"
        self._read = False
        self._closed = False

    def describe(self) -> str:
        return (f"Restate (restate-server {self.server.binary.name} at {self.server.admin}), "
                "the page's mapping: a virtual object per session, a workflow per tool call, "
                "the tool in ctx.run (max_attempts=1 for single-attempt calls), service "
                "workers each behind a TCP proxy")

    def pids(self) -> list[int]:
        return [*self.server.pids(), *(p.pid for p in self.started)]

    def limits(self) -> Limits:
        return Limits(dict(NOT_CHECKABLE), pauses_stop_runs=False)

    def start(self) -> None:
        self.server.start()
        self.router_port = self.loop.run(self.router.start(self.setup.host), timeout=10.0)
        launched = [self._launch() for _ in range(max(1, self.setup.workers))]
        for worker in launched:
            self._ready(worker)
        self.server.register(f"http://{self.setup.host}:{self.router_port}")

    def _targets(self) -> list[tuple[str, int]]:
        return [(self.setup.host, w.proxy.port) for w in self._workers.values()
                if w.process.alive]

    # -- the server ------------------------------------------------------------------------

    def kill_server(self) -> None:
        self.server.kill()

    def start_server(self) -> None:
        self.server.start()

    def server_alive(self) -> bool:
        return self.server.alive

    # -- workers ---------------------------------------------------------------------------

    def _launch(self) -> _Worker:
        port = free_port(self.setup.host)
        proxy = Proxy((self.setup.host, port))
        self.loop.run(proxy.start(self.setup.host), timeout=10.0)
        self._count += 1
        wid = f"w{self._count}"
        events = self.setup.workdir / f"{wid}.events"
        args = ["--host", self.setup.host, "--port", str(port), "--ledger", self.setup.ledger,
                "--token-file", str(self.token_file), "--name", wid, "--events", str(events)]
        log = self.setup.workdir / f"{len(self.started) + 1:03d}-worker.log"
        started = start("worker", [*_python("atmostonce.engines.restate.worker"), *args], log)
        self.started.append(started)
        worker = _Worker(WorkerRef(wid, (), started.pid), started, proxy, events, port)
        self._workers[wid] = worker
        return worker

    def _ready(self, worker: _Worker) -> WorkerRef:
        worker.process.wait_ready(READY)
        worker.ref = WorkerRef(worker.ref.id, tuple(worker.process.names), worker.process.pid)
        return worker.ref

    def start_worker(self) -> WorkerRef:
        return self._ready(self._launch())

    # -- observation -----------------------------------------------------------------------

    def client(self) -> SessionAPI:
        return RestateSessions(self.server.ingress, self.setup.config,
                               request_timeout=REQUEST_TIMEOUT)

    def server_log(self) -> ServerLog:
        log = server_log(self._journal, [w.events for w in self._workers.values()],
                         self.offset)
        if not self._read:
            log.notes.append(f"Restate's journal could not be read at the end ({self._unread}):"
                             " the server log holds only the workers' notes")
        return log

    # -- stopping --------------------------------------------------------------------------

    def close(self) -> None:
        """The journal is read (the server started again if it is down), then the workers and
        the server stop; SIGKILL for anything still there after the grace period."""
        if self._closed:
            return
        self._closed = True
        try:
            self._read_journal()
        finally:
            stop_all(self.started)
            self.server.stop()
            if self._loop is not None:
                proxies = [w.proxy for w in self._workers.values()]

                async def close_all() -> None:
                    await self.router.close()
                    for proxy in proxies:
                        await proxy.close()

                try:
                    self._loop.run(close_all(), timeout=10.0)
                finally:
                    self._loop.close()

    def _read_journal(self) -> None:
        try:
            self.server.start()
            self._journal = self.server.query(JOURNAL_QUERY, timeout=60.0)
            self._read = True
        except (SpecError, OSError) as error:
            self._unread = f"{type(error).__name__}: {error}"


def _python(module: str) -> list[str]:
    import sys

    return [sys.executable, "-m", module]


def _clock_offset() -> float:
    """This machine's wall clock minus its monotonic clock: the smallest of a few readings,
    each taken between two monotonic reads."""
    best = (float("inf"), 0.0)
    for _ in range(5):
        before = time.monotonic()
        wall = time.time()
        after = time.monotonic()
        best = min(best, (after - before, wall - (before + after) / 2))
    return best[1]


def engine(setup: EngineSetup) -> RestateEngine:
    """The Restate adapter's factory: `--engine atmostonce.engines.restate:engine`."""
    return RestateEngine(setup)
