"""The reference adapter: the project's own runtime behind the `Engine` protocol, so
`atmostonce chaos` drives it exactly like a third-party engine (`engine` is the default
`--engine`).

It starts `atmostonce serve` on a journal in the setup's directory, running the executor the
setup names (`--executor`, so a mutant runs in the real server too), and worker processes that
write to the harness's effect ledger, each through a `Proxy` of its own so that its connection
can be held or dropped. Processes are started with `atmostonce.executor.runtime.processes`
from the calling thread and die with it. Off the proxies' wire it reads hellos, `started` and
`finished` messages and every go-ahead, which it checks against the journal the moment it is
seen (D-5); `server_log()` merges that with the journal (`atmostonce.chaos.server_log`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from atmostonce.chaos.engine import (
    CutMode,
    EngineSetup,
    RunEndSeen,
    ServerLog,
    SessionAPI,
    WorkerRef,
)
from atmostonce.chaos.proxy import UP, Pipe, Proxy
from atmostonce.chaos.server_log import GoAheadSeen, JournalWatch, WireSeen, server_log
from atmostonce.executor.runtime.client import AsyncClient
from atmostonce.executor.runtime.journal import read_journal
from atmostonce.executor.runtime.loop import LoopThread
from atmostonce.executor.runtime.options import config_argv
from atmostonce.executor.runtime.processes import Managed, spawn, stop_all
from atmostonce.spec.errors import SpecError

READY = 20.0
"""Seconds a process may take to serve."""
GRACE = 3.0
"""Seconds a process may take to stop after SIGTERM before it gets SIGKILL."""
CONNECT_TIMEOUT = 5.0
"""Seconds a client keeps trying to reach a server that is restarting."""
REQUEST_TIMEOUT = 30.0


@dataclass
class _Worker:
    ref: WorkerRef
    process: Managed
    proxy: Proxy


class ReferenceEngine:
    """The runtime's server and workers on loopback, each worker behind a proxy."""

    def __init__(self, setup: EngineSetup) -> None:
        self.setup = setup
        self.journal = setup.workdir / "journal.db"
        self.port = 0
        self.server: Managed | None = None
        self.started: list[Managed] = []
        self._workers: dict[str, _Worker] = {}
        self._count = 0
        self._logs = 0
        self._loop: LoopThread | None = None
        self._watch = JournalWatch(self.journal)
        self._closed = False
        self.go_aheads: list[GoAheadSeen] = []
        self.hellos: list[WireSeen] = []
        self.starts: list[WireSeen] = []
        self.finishes: list[RunEndSeen] = []

    @property
    def loop(self) -> LoopThread:
        if self._loop is None:
            self._loop = LoopThread("atmostonce-proxies")
        return self._loop

    def describe(self) -> str:
        return (f"the reference runtime running {self.setup.executor}: atmostonce serve on "
                f"{self.setup.host}:{self.port} with its SQLite journal, worker processes each "
                "behind a TCP proxy")

    def pids(self) -> list[int]:
        return [p.pid for p in self.started]

    def start(self) -> None:
        self.start_server()
        launched = [self._launch() for _ in range(self.setup.workers)]
        for worker in launched:
            self._ready(worker)

    def _spawn(self, role: str, args: list[str]) -> Managed:
        self._logs += 1
        process = spawn(role, args, self.setup.workdir / f"{self._logs:03d}-{role}.log")
        self.started.append(process)
        return process

    # -- the server ----------------------------------------------------------------------------

    def start_server(self) -> None:
        """Start the server on its journal, on the port it had once it had one (D-8)."""
        self.server = self._spawn("serve", [
            "--journal", str(self.journal), "--host", self.setup.host, "--port", str(self.port),
            "--executor", self.setup.executor, *config_argv(self.setup.config)])
        self.server.wait_ready(READY)
        self.port = int(self.server.info["port"])

    def kill_server(self) -> None:
        if self.server is not None:
            self.server.kill()
        self.loop.drain()

    def server_alive(self) -> bool:
        return self.server is not None and self.server.alive

    # -- workers -------------------------------------------------------------------------------

    def _launch(self) -> _Worker:
        proxy = Proxy((self.setup.host, self.port), self._tap)
        port = self.loop.run(proxy.start(self.setup.host), timeout=10.0)
        self._count += 1
        wid = f"w{self._count}"
        process = self._spawn("worker", [
            "--server", f"{self.setup.host}:{port}", "--ledger", self.setup.ledger,
            "--name", wid, "--slots", "1"])
        worker = _Worker(WorkerRef(wid, (), process.pid), process, proxy)
        self._workers[wid] = worker
        return worker

    def _ready(self, worker: _Worker) -> WorkerRef:
        worker.process.wait_ready(READY)
        worker.ref = WorkerRef(worker.ref.id, tuple(worker.process.names), worker.process.pid)
        return worker.ref

    def start_worker(self) -> WorkerRef:
        return self._ready(self._launch())

    def _of(self, ref: WorkerRef) -> _Worker:
        worker = self._workers.get(ref.id)
        if worker is None:
            raise SpecError(f"no worker {ref.id} was started")
        return worker

    def workers(self) -> list[WorkerRef]:
        return [w.ref for w in self._workers.values() if w.process.alive]

    def worker_alive(self, worker: WorkerRef) -> bool:
        return self._of(worker).process.alive

    def kill_worker(self, worker: WorkerRef) -> None:
        self._of(worker).process.kill()

    def pause_worker(self, worker: WorkerRef) -> None:
        self._of(worker).process.pause()

    def resume_worker(self, worker: WorkerRef) -> None:
        self._of(worker).process.resume()

    def cut(self, worker: WorkerRef, mode: CutMode) -> None:
        proxy = self._of(worker).proxy
        self.loop.call(lambda: proxy.cut(mode))

    def heal(self, worker: WorkerRef) -> None:
        proxy = self._of(worker).proxy
        self.loop.call(proxy.heal)

    # -- what it saw ---------------------------------------------------------------------------

    def _tap(self, pipe: Pipe, direction: str, line: bytes, at: float) -> None:
        """Runs on the proxies' loop for every line a proxy receives."""
        if direction == UP:
            if b'"type":"hello"' in line:
                pipe.worker = str(json.loads(line).get("worker", ""))
                self.hellos.append(WireSeen(at, pipe.worker))
            elif b'"type":"finished"' in line:
                message = json.loads(line)
                ok = message.get("ok")
                self.finishes.append(RunEndSeen(at, pipe.worker, str(message.get("attempt")),
                                                ok if isinstance(ok, bool) else None))
            elif b'"type":"started"' in line and UP not in pipe.proxy.held:
                self.starts.append(WireSeen(at, pipe.worker,
                                            str(json.loads(line).get("attempt"))))
        elif b'"type":"go_ahead"' in line:
            message = json.loads(line)
            attempt = str(message.get("attempt"))
            self.go_aheads.append(GoAheadSeen(
                at, pipe.worker, attempt, str(message.get("key")), str(message.get("tool")),
                self._watch.handed(attempt, pipe.worker)))

    def client(self) -> SessionAPI:
        return AsyncClient(self.setup.host, self.port, connect_timeout=CONNECT_TIMEOUT,
                           request_timeout=REQUEST_TIMEOUT)

    def server_log(self) -> ServerLog:
        journal = read_journal(self.journal) if self.journal.exists() else []
        return server_log(journal, self.go_aheads, self.hellos, self.starts, self.finishes)

    # -- stopping ------------------------------------------------------------------------------

    def close(self) -> None:
        """Workers first (each finishes the run in hand), then the server, which makes its
        journal durable; SIGKILL for anything still there after the grace period."""
        if self._closed:
            return
        self._closed = True
        stop_all([w.process for w in self._workers.values()])
        stop_all([p for p in self.started if p.role == "serve"])
        stop_all(self.started)
        if self._loop is not None:
            proxies = [w.proxy for w in self._workers.values()]

            async def close_all() -> None:
                for proxy in proxies:
                    await proxy.close()
                self._watch.close()

            try:
                self._loop.run(close_all(), timeout=10.0)
            finally:
                self._loop.close()



def engine(setup: EngineSetup) -> ReferenceEngine:
    """The reference adapter's factory: `--engine atmostonce.chaos.reference:engine`."""
    return ReferenceEngine(setup)
