"""Process control for the runtime on loopback: start the effect ledger, the server and workers
as real OS processes, wait until each serves, kill them (SIGKILL), pause them (SIGSTOP and
SIGCONT), restart the server from its journal, and clean up everything started.

This is the base a chaos harness builds on::

    with Cluster(config=ExecutorConfig(heartbeat_timeout=2.0, lease=1.0), workers=2) as cluster:
        client = cluster.client()                  # the session API (Client)
        ...
        worker = cluster.worker_of(name)           # the process that runs a worker name
        cluster.kill(worker)                       # SIGKILL, waits until it is gone
        cluster.pause(cluster.server); cluster.resume(cluster.server)
        cluster.kill_server(); cluster.restart_server()   # same journal, same port (D-8)
        cluster.start_worker()                     # one more worker process
        ledger = cluster.ledger_client()           # ground truth: runs and writes

Each process is `python -m atmostonce.runtime ROLE ...` with `sys.executable`, its
stdout and stderr in a log file in the cluster's directory; it is ready once it printed its
`atmostonce-ready {...}` line, which also tells the port it bound (port 0 picks a free one, so
there is no race for ports; a restarted server binds the port it had). A process that exits
before it is ready raises SpecError with the error it printed. `close()` (also on an exception
and on Ctrl-C, through `with`) stops every process it started: SIGTERM, then SIGKILL after a
grace period. With `die_with_parent` (the default, Linux only) a child also gets SIGKILL when
the thread that started it ends, so nothing outlives a test run that was killed; start the
cluster from a thread that lives as long as it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, NoReturn

from atmostonce.runtime.client import AsyncClient, Client
from atmostonce.runtime.ledger_client import LedgerClient
from atmostonce.runtime.options import ToolOptions, config_argv
from atmostonce.runtime.tokens import ensure_token
from atmostonce.runtime.wire import LOOPBACK, READY_PREFIX, flush_all
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig

PR_SET_PDEATHSIG = 1
MODULE = "atmostonce.runtime"
PARENT_ENV = "ATMOSTONCE_PARENT_PID"
"""Set in a child's environment when it should die with the thread that started it."""
GRACE = 2.0
_CONFIG = ExecutorConfig()
_TOOLS = ToolOptions()


class Managed:
    """One child process and what its readiness line said (`info`: role, host, port, pid,
    and for a worker its `names`)."""

    def __init__(self, role: str, argv: list[str], log: Path, popen: subprocess.Popen[bytes]
                 ) -> None:
        self.role = role
        self.argv = argv
        self.log = log
        self.popen = popen
        self.info: dict[str, Any] = {}
        self.paused = False
        self.started = time.monotonic()

    def __repr__(self) -> str:
        return f"<{self.role} pid {self.pid} {'alive' if self.alive else 'gone'}>"

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    @property
    def names(self) -> list[str]:
        """The worker names of a worker process."""
        return list(self.info.get("names", []))

    def signal(self, signum: int) -> None:
        if self.alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL, and wait until the process is gone."""
        self.signal(signal.SIGKILL)
        self.popen.wait()
        self.paused = False

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self.signal(signal.SIGCONT)
        self.paused = False

    def stop(self, grace: float = GRACE) -> int:
        """SIGTERM (after SIGCONT if paused), SIGKILL when still alive after `grace`."""
        if self.alive:
            if self.paused:
                self.resume()
            self.signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.popen.wait()

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout)

    def output(self) -> str:
        """Everything the process printed so far."""
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.output().splitlines():
                if line.startswith(READY_PREFIX):
                    self.info = json.loads(line[len(READY_PREFIX):])
                    return self.info
            code = self.popen.poll()
            if code is not None:
                raise SpecError(f"the {self.role} process exited with status {code} before it "
                                f"was ready: {self._last_error()}")
            if time.monotonic() > deadline:
                self.kill()
                raise SpecError(f"the {self.role} process was not ready "
                                f"{time.monotonic() - self.started:.1f} s after it was started "
                                f"(log: {self.log})")
            time.sleep(0.01)

    def _last_error(self) -> str:
        lines = [line for line in self.output().splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        return (errors or lines or ["(no output)"])[-1].strip()


def spawn(role: str, args: Sequence[str], log: Path, die_with_parent: bool = True) -> Managed:
    """Start `python -m atmostonce.runtime ROLE ARGS`, output to `log`."""
    return start(role, [sys.executable, "-m", MODULE, role, *args], log, die_with_parent)


def start(role: str, argv: Sequence[str], log: Path, die_with_parent: bool = True) -> Managed:
    """Start `argv` in a session of its own with its output in `log`; with `die_with_parent`
    it is told (`PARENT_ENV`) to ask for SIGKILL when this process goes (`exit_with_parent`)."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    if die_with_parent:
        env[PARENT_ENV] = str(os.getpid())
    else:
        env.pop(PARENT_ENV, None)
    with log.open("ab") as out:
        popen = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return Managed(role, list(argv), log, popen)


def exit_with_parent() -> None:
    """In a child started with `PARENT_ENV` set: ask Linux to SIGKILL this process when its
    parent goes, and end at once if the parent is gone already."""
    parent = os.environ.pop(PARENT_ENV, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if str(os.getppid()) != parent:
        os._exit(1)


def stop_all(processes: list[Managed]) -> None:
    """SIGTERM each process still alive (resumed first if paused), then SIGKILL what is left
    after GRACE."""
    for process in processes:
        if process.alive:
            process.resume()
            process.signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    for process in processes:
        try:
            process.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()


class Cluster:
    """A ledger, a server and workers on loopback, started and stopped together."""

    def __init__(self, workdir: Path | str | None = None, *,
                 config: ExecutorConfig = _CONFIG, workers: int = 2, slots: int = 1,
                 tools: ToolOptions = _TOOLS, heartbeat_interval: float | None = None,
                 host: str = LOOPBACK, ready_timeout: float = 20.0,
                 die_with_parent: bool = True, executor: str | None = None) -> None:
        self._own_dir = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="atmostonce-")) if workdir is None \
            else Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.initial_workers = workers
        self.slots = slots
        self.tools = tools
        self.heartbeat_interval = heartbeat_interval
        self.host = host
        self.ready_timeout = ready_timeout
        self.die_with_parent = die_with_parent
        self.executor = executor
        """The server's `--executor module:function`, None for the reference executor; changing
        it before `restart_server` is how a test upgrades the server."""
        self.journal = self.workdir / "journal.db"
        self.ledger_db = self.workdir / "ledger.db"
        self.token_file = self.workdir / "token"
        """The deployment's token: the server's and the ledger's, for workers and clients."""
        self.approver_token_file = self.workdir / "approver-token"
        self.token = ensure_token(self.token_file)
        self.approver_token = ensure_token(self.approver_token_file)
        self.ledger: Managed | None = None
        self.server: Managed | None = None
        self.workers: list[Managed] = []
        self.started: list[Managed] = []
        self._server_port = 0
        self._counter = 0
        self._closed = False
        weakref.finalize(self, stop_all, self.started)

    # -- starting ---------------------------------------------------------------------------------

    def start(self) -> Cluster:
        """Start the ledger, the server and the workers, each ready before the next."""
        try:
            self.start_ledger()
            self.start_server()
            for _ in range(self.initial_workers):
                self.start_worker()
        except BaseException:
            self.close()
            raise
        return self

    def _spawn(self, role: str, args: Sequence[str]) -> Managed:
        self._counter += 1
        process = spawn(role, args, self.workdir / f"{self._counter:02d}-{role}.log",
                        self.die_with_parent)
        self.started.append(process)
        process.wait_ready(self.ready_timeout)
        return process

    def start_ledger(self) -> Managed:
        self.ledger = self._spawn("ledger", ["--db", str(self.ledger_db), "--host", self.host,
                                             "--port", "0", "--token-file",
                                             str(self.token_file)])
        return self.ledger

    def start_server(self) -> Managed:
        """Start the server on its journal (and on its old port, once it had one)."""
        self.server = self._spawn("serve", [
            "--journal", str(self.journal), "--host", self.host,
            "--port", str(self._server_port), "--token-file", str(self.token_file),
            "--approver-token-file", str(self.approver_token_file), *config_argv(self.config),
            *(["--executor", self.executor] if self.executor is not None else [])])
        self._server_port = int(self.server.info["port"])
        return self.server

    def start_worker(self, name: str | None = None, slots: int | None = None,
                     tools: ToolOptions | None = None, extra: Sequence[str] = ()) -> Managed:
        """One more worker process, connected to the server when this returns."""
        args = ["--server", self.server_address, "--ledger", self.ledger_address,
                "--token-file", str(self.token_file),
                "--name", name or f"w{len(self.workers) + 1}",
                "--slots", str(slots or self.slots), *(tools or self.tools).argv(), *extra]
        if self.heartbeat_interval is not None:
            args += ["--heartbeat-interval", repr(self.heartbeat_interval)]
        worker = self._spawn("worker", args)
        self.workers.append(worker)
        return worker

    def respawn_workers(self) -> list[Managed]:
        """Start a fresh worker process (new pid, so new names) for each one that exited, for
        example after it fenced itself (D-12); returns the new ones."""
        fresh: list[Managed] = []
        for worker in list(self.workers):
            if not worker.alive:
                self.workers.remove(worker)
                fresh.append(self.start_worker())
        return fresh

    # -- addresses and clients ----------------------------------------------------------------

    @property
    def server_address(self) -> str:
        return f"{self.host}:{self._server_port}"

    @property
    def server_port(self) -> int:
        return self._server_port

    @property
    def ledger_address(self) -> str:
        if self.ledger is None:
            raise SpecError("the ledger is not started")
        return f"{self.host}:{self.ledger.info['port']}"

    def client(self, *, approver: bool = True, **options: Any) -> Client:
        """A client of the session API; with the approver's token unless `approver` is False,
        when it holds the deployment token and may ask but not approve."""
        return Client(self.host, self._server_port, token=self._client_token(approver),
                      **options)

    def async_client(self, *, approver: bool = True, **options: Any) -> AsyncClient:
        return AsyncClient(self.host, self._server_port, token=self._client_token(approver),
                           **options)

    def _client_token(self, approver: bool) -> str:
        return self.approver_token if approver else self.token

    def ledger_client(self) -> LedgerClient:
        if self.ledger is None:
            raise SpecError("the ledger is not started")
        return LedgerClient(self.host, int(self.ledger.info["port"]), token=self.token)

    def worker_of(self, name: str) -> Managed:
        """The worker process that runs the worker called `name`."""
        for worker in self.workers:
            if name in worker.names:
                return worker
        raise SpecError(f"no worker process runs a worker called {name!r}")

    # -- faults -------------------------------------------------------------------------------

    def kill(self, process: Managed) -> None:
        """SIGKILL: the process ends at once, its connections drop, its runs stop."""
        process.kill()

    def pause(self, process: Managed) -> None:
        """SIGSTOP: the process stops where it is and keeps its connections."""
        process.pause()

    def resume(self, process: Managed) -> None:
        process.resume()

    def kill_server(self) -> None:
        if self.server is not None:
            self.server.kill()

    def restart_server(self) -> Managed:
        """Kill the server if it still runs and start it again from its journal, on the same
        port; workers reconnect on their own (D-8)."""
        self.kill_server()
        return self.start_server()

    # -- cleaning up ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every process this cluster started; remove its directory if it made it."""
        if self._closed:
            return
        self._closed = True
        stop_all(self.started)
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()


def leave(code: int) -> NoReturn:
    """End an engine's worker process now, from wherever it is: no interpreter teardown, no
    waiting for the engine's own threads or a shutdown that needs a server out of reach."""
    flush_all()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_worker(what: str, work: Coroutine[Any, Any, object]) -> NoReturn:
    """Run an engine's worker process to its end: exit 2 with one line on bad input
    (SpecError), 1 with the error's name on anything else, `work`'s own exit otherwise."""
    try:
        asyncio.run(work)
    except SpecError as error:
        print(f"atmostonce {what}: {error}", file=sys.stderr, flush=True)
        leave(2)
    except BaseException as error:
        print(f"atmostonce {what}: {type(error).__name__}: {error}", file=sys.stderr,
              flush=True)
    leave(1)
