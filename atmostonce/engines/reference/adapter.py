"""The reference adapter: the project's own runtime behind the `Engine` protocol, so
`atmostonce chaos` drives it exactly like a third-party engine (`engine` is the default
`--engine`).

It starts `atmostonce serve` on a journal in the setup's directory, running the executor the
setup names (`--executor`, so a mutant runs in the real server too), and worker processes that
write to the harness's effect ledger, each through a `Proxy` of its own so that its connection
can be held or dropped. Processes are started with `atmostonce.runtime.processes`
from the calling thread and die with it. Off the proxies' wire it reads hellos, `started` and
`finished` messages and every go-ahead, which it checks against the journal the moment it is
seen (D-5); `server_log()` merges that with the journal and the server's liveness log, its
workers' connections and heartbeats (`atmostonce.engines.reference.server_log`).

A server stops when the executor under test fails (raises, or answers outside the protocol) and
logs a line that names the failure. Whenever the adapter finds its server gone (asked whether it
is alive, to start it again, or waiting for a worker), it reads that server's log and raises
`ExecutorFailure` with the line, so the harness reports the executor, not a worker that did not
come up; `server_log()` lists the failure of every server process the run started.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from pathlib import Path

from atmostonce.engines.adapter import (
    EngineSetup,
    ExecutorFailure,
    Limits,
    RunEndSeen,
    ServerLog,
    SessionAPI,
    WorkerRef,
)
from atmostonce.engines.proxied import ProxiedWorker, ProxiedWorkers
from atmostonce.engines.proxy import UP, Pipe, Proxy
from atmostonce.engines.reference.server_log import GoAheadSeen, JournalWatch, WireSeen, server_log
from atmostonce.runtime import fiu
from atmostonce.runtime.client import AsyncClient
from atmostonce.runtime.disk_faults import DISK_FAULT_EXIT
from atmostonce.runtime.fiu import DiskFault
from atmostonce.runtime.journal import read_journal
from atmostonce.runtime.liveness_log import read_liveness
from atmostonce.runtime.options import config_argv
from atmostonce.runtime.processes import MODULE, Managed, spawn, start, stop_all
from atmostonce.runtime.tokens import ensure_token
from atmostonce.runtime.wire import READY_PREFIX
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PropertyId

READY = 20.0
DISK_MUTANTS = "atmostonce.engines.reference.disk_mutants"
"""Seconds a process may take to serve."""
GRACE = 3.0
"""Seconds a process may take to stop after SIGTERM before it gets SIGKILL."""
CONNECT_TIMEOUT = 5.0
"""Seconds a client keeps trying to reach a server that is restarting."""
REQUEST_TIMEOUT = 30.0
WATCH = 0.02
"""Seconds between two looks at a worker that is starting and the server it waits for."""
_FAILURE = re.compile(r"\bthe executor(?: failed|'s commands)\b")
"""What the server's log line about a failure of the executor says (a failure stops the
server; a broken protocol rule it only logs is judged by the history)."""
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d ")
"""How a log record's first line starts (its time), as opposed to a traceback's lines."""


def executor_failure(server: Managed) -> ExecutorFailure | None:
    """Why the server process `server` stopped, if its executor failed: the first line of its
    log that speaks of the executor, with the exception its traceback ends with."""
    lines = server.output().splitlines()
    for i, line in enumerate(lines):
        if _FAILURE.search(line):
            return ExecutorFailure(line.strip(), server.log, _exception(lines[i + 1:]))
    return None


def _exception(after: list[str]) -> str:
    """The exception line of the traceback that follows a log record (its last unindented
    line), or "" when none follows."""
    block: list[str] = []
    for line in after:
        if _RECORD.match(line):
            break
        block.append(line)
    if not block or not block[0].startswith("Traceback"):
        return ""
    last = [line for line in block if line.strip() and not line[0].isspace()]
    return last[-1].strip() if last else ""




NOT_CHECKABLE: dict[str, str] = {
    PropertyId.A_CANCEL_ON_TIMEOUT: "the journal records a run timeout only as the attempt's "
    "end, and the proxies do not read the server's cancels off the wire: whether the worker was "
    "told is judged on the executor's own commands, in the conformance and simulation layers",
}
"""The properties this engine cannot give evidence for, and why."""


class ReferenceEngine(ProxiedWorkers[ProxiedWorker]):
    """The runtime's server and workers on loopback, each worker behind a proxy."""

    def __init__(self, setup: EngineSetup) -> None:
        super().__init__()
        self.setup = setup
        self.journal = setup.workdir / "journal.db"
        self.liveness = setup.workdir / "liveness.jsonl"
        self.token_file = setup.token_file or setup.workdir / "token"
        """The deployment's token: the ledger's and the server's, for workers and clients."""
        self.approver_token_file = setup.workdir / "approver-token"
        """The token whose holder may approve and reject calls: the harness's clients."""
        ensure_token(self.token_file)
        self.approver_token = ensure_token(self.approver_token_file)
        self.port = 0
        self.server_command: tuple[str, ...] = ()
        """The command that runs the server's role, when not the runtime's own."""
        self.fiu_control = setup.workdir / "fiu"
        """Where libfiu's control fifos of a server started for disk faults go."""
        if setup.disk_faults and (why := fiu.missing()) is not None:
            raise SpecError(why)
        self.server: Managed | None = None
        self.started: list[Managed] = []
        self._count = 0
        self._logs = 0
        self._watch = JournalWatch(self.journal)
        self._closed = False
        self.go_aheads: list[GoAheadSeen] = []
        self.starts: list[WireSeen] = []
        self.finishes: list[RunEndSeen] = []

    def describe(self) -> str:
        return (f"the reference runtime running {self.setup.executor}: atmostonce serve on "
                f"{self.setup.host}:{self.port} with its SQLite journal, worker processes each "
                "behind a TCP proxy")

    def pids(self) -> list[int]:
        return [p.pid for p in self.started]

    def limits(self) -> Limits:
        return Limits(dict(NOT_CHECKABLE), renewals_logged=True)

    def start(self) -> None:
        self.start_server()
        launched = [self._launch() for _ in range(self.setup.workers)]
        for worker in launched:
            self._ready(worker)

    def _spawn(self, role: str, args: list[str], command: tuple[str, ...] = (),
               disk_faults: bool = False) -> Managed:
        """Start `atmostonce.runtime ROLE ARGS` (or `COMMAND ROLE ARGS`); with `disk_faults`,
        under libfiu."""
        self._logs += 1
        log = self.setup.workdir / f"{self._logs:03d}-{role}.log"
        if not command and not disk_faults:
            process = spawn(role, args, log)
        else:
            argv = [*(command or (sys.executable, "-m", MODULE)), role, *args]
            process = start(role, fiu.under_fiu(argv, self.fiu_control) if disk_faults else argv,
                            log)
        self.started.append(process)
        return process

    # -- the server ----------------------------------------------------------------------------

    def start_server(self) -> None:
        """Start the server on its journal, on the port it had once it had one (D-8); not
        again after its executor failed (`ExecutorFailure`)."""
        self._check_failure()
        before = _digest(self.journal)
        self.server = self._spawn("serve", [
            "--journal", str(self.journal), "--host", self.setup.host, "--port", str(self.port),
            "--token-file", str(self.token_file),
            "--approver-token-file", str(self.approver_token_file),
            "--liveness-log", str(self.liveness),
            "--executor", self.setup.executor, *config_argv(self.setup.config)],
            self.server_command, self.setup.disk_faults)
        try:
            self.server.wait_ready(READY)
        except SpecError as error:
            self._check_failure()
            if _digest(self.journal) != before:
                raise SpecError(f"{error}; and the journal it refused was changed: a refused "
                                "journal must be left as it was") from None
            raise
        self.port = int(self.server.info["port"])

    def kill_server(self) -> None:
        if self.server is not None:
            self.server.kill()
        self.loop.drain()

    def server_alive(self) -> bool:
        """Whether the server runs; `ExecutorFailure` when it stopped because its executor
        failed."""
        if self.server is not None and self.server.alive:
            return True
        self._check_failure()
        return False

    def _check_failure(self) -> None:
        """Raise `ExecutorFailure` if the latest server is gone because its executor failed."""
        if self.server is not None and not self.server.alive:
            failure = executor_failure(self.server)
            if failure is not None:
                raise failure

    def disk_fault(self, fault: DiskFault) -> None:
        if self.server is None or not self.server.alive:
            raise SpecError("the server is not running")
        fiu.inject(self.server.pid, self.fiu_control, fault)

    def clear_disk_fault(self, fault: DiskFault) -> None:
        if self.server is not None and self.server.alive:
            try:
                fiu.clear(self.server.pid, self.fiu_control, fault)
            except SpecError:
                if self.server.alive:
                    raise

    def died_of_disk_fault(self) -> bool:
        return self.server is not None and self.server.returncode == DISK_FAULT_EXIT

    # -- workers -------------------------------------------------------------------------------

    def _launch(self) -> ProxiedWorker:
        proxy = Proxy((self.setup.host, self.port), self._tap)
        port = self.loop.run(proxy.start(self.setup.host), timeout=10.0)
        self._count += 1
        wid = f"w{self._count}"
        process = self._spawn("worker", [
            "--server", f"{self.setup.host}:{port}", "--ledger", self.setup.ledger,
            "--token-file", str(self.token_file), "--name", wid, "--slots", "1"])
        worker = ProxiedWorker(WorkerRef(wid, (), process.pid), process, proxy)
        self._workers[wid] = worker
        return worker

    def _ready(self, worker: ProxiedWorker) -> WorkerRef:
        """Wait until the worker serves; a server that stops meanwhile because its executor
        failed ends the wait with `ExecutorFailure`."""
        process = worker.process
        deadline = time.monotonic() + READY
        while (process.alive and time.monotonic() < deadline
               and READY_PREFIX not in process.output()):
            if not self.server_alive():
                break
            time.sleep(WATCH)
        try:
            process.wait_ready(max(0.0, deadline - time.monotonic()))
        except SpecError:
            self._check_failure()
            raise
        worker.ref = WorkerRef(worker.ref.id, tuple(process.names), process.pid)
        return worker.ref

    def start_worker(self) -> WorkerRef:
        return self._ready(self._launch())

    # -- what it saw ---------------------------------------------------------------------------

    def _tap(self, pipe: Pipe, direction: str, line: bytes, at: float) -> None:
        """Runs on the proxies' loop for every line a proxy receives."""
        if direction == UP:
            if b'"type":"hello"' in line:
                pipe.worker = str(json.loads(line).get("worker", ""))
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
        return AsyncClient(self.setup.host, self.port, token=self.approver_token,
                           connect_timeout=CONNECT_TIMEOUT, request_timeout=REQUEST_TIMEOUT)

    def server_log(self) -> ServerLog:
        journal = read_journal(self.journal) if self.journal.exists() else []
        log = server_log(journal, self.go_aheads, read_liveness(self.liveness), self.starts,
                         self.finishes)
        log.executor_failures = [failure for process in self.started if process.role == "serve"
                                 if (failure := executor_failure(process)) is not None]
        return log

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
    """The reference adapter's factory: `--engine atmostonce.engines.reference:engine`."""
    return ReferenceEngine(setup)


def _digest(journal: Path) -> str:
    """A digest of the bytes of the journal and its write-ahead log, as they are now."""
    digest = hashlib.sha256()
    for path in (journal, journal.with_name(journal.name + "-wal")):
        digest.update(path.read_bytes() if path.exists() else b"-")
    return digest.hexdigest()


def swallows_disk_errors(setup: EngineSetup) -> ReferenceEngine:
    """A positive control of the `disk` nemesis: a server that passes over a failed commit and
    keeps serving (`atmostonce.engines.reference.disk_mutants`)."""
    return _mutant(setup, "swallow")


def acks_before_commit(setup: EngineSetup) -> ReferenceEngine:
    """A positive control of the `disk` nemesis: a server that answers before its commit."""
    return _mutant(setup, "ack-first")


def _mutant(setup: EngineSetup, variant: str) -> ReferenceEngine:
    built = ReferenceEngine(setup)
    built.server_command = (sys.executable, "-m", DISK_MUTANTS, variant)
    return built

