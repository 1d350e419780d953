"""The Temporal worker processes of the mapping: `python -m atmostonce.engines.temporal.worker
tools|sessions ...`.

`sessions` runs the workflows (`workflows.WORKFLOWS`) on the sessions task queue. `tools` runs
the tool activity on the tools task queue, `--slots` activities at a time (one for chaos), and
is what the chaos harness kills, pauses and cuts off. Its activity does what the runtime's
worker does around a run of one of the four demo tools (`atmostonce.runtime.tools`), the
ledger being the ground truth the checkers judge by:

1. note the hand-out in its events file (`--events`, one JSON object a line: `started`,
   `ended`, `fenced`), before anything else: Temporal's history keeps only the last attempt's
   STARTED event, so this is how earlier attempts are seen;
2. put the run's start on record at the effect ledger, and only then run the tool, which
   writes with the call's idempotency key (TC-KEY-1, TC-KEY-3);
3. while the tool runs, heartbeat to the server through the client's `RecordActivityTask
   Heartbeat` call, whose answer says the server heard it (the SDK's own `activity.heartbeat`
   is fire-and-forget and cannot say so); an answer that the activity is gone (it timed out)
   is passed on to the tool as a cancel request, which it may ignore (TC-AMO-3);
4. log the run's end to the ledger, then return the result, or raise a non-retryable
   `ToolReportedFailure` for a failure the tool reported (D-3).

The lease (D-12) runs from the moment the server recorded the attempt's start (the task's
`started_time`, on the server's clock, which is this machine's) and is renewed by each heard
heartbeat. A task that reaches the worker after its lease (held by a cut connection, or by a
pause) is refused: the tool does not run, and the attempt fails. A worker whose heartbeats have
not been heard for `--lease` seconds while a run goes on stops the run by ending its process
(exit status 3), after telling the ledger; its writes carry the lease's deadline, so the ledger
refuses a write made after it (a worker paused between its check and its write). The lease is
shorter than the heartbeat timeout, so by the time the server gives up on the attempt, the run
is over. One window stays: a worker paused between taking a task in time and the ledger's
record of the run's start logs that start late, though the run can take no effect.
`--no-lease` turns all this off: the broken variant `no_lease` shows what a cut-off worker then
does.

Readiness: one `atmostonce-ready` line once the worker is connected and polling. SIGTERM stops
the process within a second; a run still going is reported to the ledger as stopped. The process
ends with `os._exit`, never through interpreter teardown, which can crash after Temporal's
native threads (exit codes of short-lived Temporal clients are not to be trusted otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Coroutine, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

from temporalio import activity
from temporalio.client import Client, Plugin
from temporalio.exceptions import ApplicationError
from temporalio.service import RetryConfig, RPCError, RPCStatusCode
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from atmostonce.engines.temporal import mapping
from atmostonce.engines.temporal.payloads import ToolJob
from atmostonce.engines.worker_main import add_process_arguments, worker_main
from atmostonce.runtime.ledger_client import AsyncLedger, worker_ledger
from atmostonce.runtime.processes import leave
from atmostonce.runtime.tokens import read_token
from atmostonce.runtime.tools import Behaviour, Fenced, WriteResult, behaviours, run_tool
from atmostonce.runtime.wire import flush_all, ready_line
from atmostonce.spec.errors import SpecError

log = logging.getLogger("atmostonce.temporal.worker")

FENCED_EXIT = 3
LATE_TYPE = "TaskAfterLease"
"""The failure of an attempt whose task reached the worker after the lease: the tool did not
run, but the server may have given up on the attempt already, so it counts as reached (D-5)."""
STOP_GRACE = 0.6
"""Seconds a run gets to end after SIGTERM before the worker stops it."""
CONNECT_FOR = 30.0
"""Seconds the worker keeps trying to reach the server and the ledger at start."""
RUNNER = SandboxedWorkflowRunner(
    restrictions=SandboxRestrictions.default.with_passthrough_modules("atmostonce"))
"""The workflow sandbox, with this package passed through: its modules are deterministic (the
spec's pure rules and the workflows), and importing them afresh for every workflow run, as the
sandbox otherwise does, takes seconds on a busy machine."""
RETRY = RetryConfig(initial_interval_millis=50, max_interval_millis=1000,
                    max_elapsed_time_millis=15000, max_retries=30)
"""The client's own retries of a failed call, long enough to outlast a server restart: a
result the tool returned while the server was down is delivered when it is back, instead of
the attempt ending by its heartbeat timeout (outcome_unknown although the tool returned).
Heartbeats are bounded by the lease whatever this allows."""


class EventsFile:
    """The worker's events file: each line written whole with one `write`, so a SIGKILL
    leaves every line before it intact."""

    def __init__(self, path: Path, worker: str) -> None:
        self.worker = worker
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def note(self, kind: str, **fields: object) -> None:
        line = json.dumps({"type": kind, "at": time.monotonic(), "worker": self.worker,
                           **fields}, separators=(",", ":"))
        os.write(self._fd, (line + "\n").encode())


class _Run:
    """One run of a tool at this worker: the tool's context (`ToolContext`)."""

    def __init__(self, tools: ToolWorker, attempt: str, job: ToolJob) -> None:
        self.tools = tools
        self.attempt = attempt
        self.key = job.key
        self.tool = job.tool
        self.cancelled = asyncio.Event()
        self.going = True

    async def write(self, payload: str) -> WriteResult:
        """The tool's write with the call's key, carrying the lease's deadline (D-12)."""
        tools = self.tools
        deadline = tools.deadline()
        if deadline is not None and time.monotonic() > deadline:
            tools.fence(f"lease over before a write of {self.attempt}")
        answer = await tools.ledger.request({
            "op": "write", "worker": tools.name, "attempt": self.attempt, "key": self.key,
            "tool": self.tool, "payload": payload, "deadline": deadline})
        if answer.get("fenced"):
            raise Fenced(self.attempt)
        return WriteResult(bool(answer.get("applied")), int(answer.get("count", 0)))


class ToolWorker:
    """The tool activity and the process state it shares: the ledger connection, the lease,
    the run in hand."""

    def __init__(self, client: Client, ledger: AsyncLedger, name: str, lease: float,
                 use_lease: bool, events: EventsFile, table: dict[str, Behaviour]) -> None:
        self.client = client
        self.ledger = ledger
        self.name = name
        self.lease = lease
        self.use_lease = use_lease
        self.events = events
        self.table = table
        self.anchor = 0.0
        """When the latest heartbeat the server answered was sent: the lease is the
        connection's, so any run's heard heartbeat renews it for all."""
        self.runs: dict[str, _Run] = {}
        """The runs going at this worker, by attempt."""

    def deadline(self) -> float | None:
        return self.anchor + self.lease if self.use_lease else None

    @activity.defn(name=mapping.ACTIVITY)
    async def call_tool(self, job: ToolJob) -> str:
        """One attempt of a tool call (see the module docstring)."""
        info = activity.info()
        attempt = f"{job.key}#{info.attempt}"
        self.events.note("started", attempt=attempt, key=job.key, tool=job.tool,
                         number=info.attempt, workflow=info.workflow_id)
        late = max(0.0, time.time() - info.started_time.timestamp())
        self.anchor = max(self.anchor, time.monotonic() - late)
        if self.use_lease and late > self.lease:
            self.events.note("refused", attempt=attempt, late=late)
            raise ApplicationError(f"{job.tool} did not run: its task reached the worker "
                                   f"{late:.2f} s after the server handed it out, past the "
                                   f"lease ({self.lease:g} s)", type=LATE_TYPE)
        run = _Run(self, attempt, job)
        try:
            await self.ledger.request({"op": "run_started", "worker": self.name,
                                       "attempt": attempt, "key": job.key, "tool": job.tool})
        except SpecError as error:
            output = f"{job.tool} did not run: the effect ledger did not record its start " \
                     f"({error})"
            self.events.note("ended", attempt=attempt, ok=False)
            raise ApplicationError(output, type=mapping.TOOL_FAILED_TYPE,
                                   non_retryable=True) from None
        self.runs[attempt] = run
        beats = asyncio.create_task(self._heartbeats(run, info.task_token))
        try:
            ok, output = await run_tool(job.tool, job.arguments, run, self.table)
        except Fenced:
            self.fence(f"the ledger refused a write of {attempt}: lease over")
        except Exception as error:  # a tool that raises reports a failure (D-3)
            ok, output = False, f"{job.tool} raised {type(error).__name__}: {error}"
        finally:
            beats.cancel()
        deadline = self.deadline()
        if deadline is not None and time.monotonic() > deadline:
            self.fence(f"lease over when {attempt} ended")
        self.ledger.send({"op": "run_ended", "worker": self.name, "attempt": attempt,
                          "end": "returned" if ok else "tool_failed", "output": output})
        run.going = False
        self.runs.pop(attempt, None)
        self.events.note("ended", attempt=attempt, ok=ok)
        if not ok:
            raise ApplicationError(output, type=mapping.TOOL_FAILED_TYPE, non_retryable=True)
        return output

    async def _heartbeats(self, run: _Run, token: bytes) -> None:
        """Heartbeat every quarter lease; a heard one renews the lease, an answer that the
        attempt is gone at the server is a cancel request for the tool (TC-AMO-3)."""
        handle = self.client.get_async_activity_handle(task_token=token)
        bound = self.lease / 2
        while run.going:
            sent = time.monotonic()
            try:
                await asyncio.wait_for(handle.heartbeat(rpc_timeout=timedelta(seconds=bound)),
                                       bound)
                self.anchor = max(self.anchor, sent)
            except RPCError as error:
                if error.status is RPCStatusCode.NOT_FOUND:
                    self.anchor = max(self.anchor, sent)
                    run.cancelled.set()
            except Exception as error:  # unreachable, or cancelled: the lease decides
                log.info("%s: a heartbeat of %s was not heard: %s", self.name, run.attempt,
                         type(error).__name__)
            await asyncio.sleep(self.lease / 4)

    async def watch(self) -> None:
        """The lease watchdog: a run whose heartbeats went unheard for the lease stops."""
        while True:
            deadline = self.deadline()
            if self.runs and deadline is not None and time.monotonic() > deadline:
                self.fence(f"no heartbeat heard for the lease ({self.lease:g} s) while "
                           f"running {', '.join(self.runs)}")
            await asyncio.sleep(max(0.005, self.lease / 20))

    def fence(self, reason: str) -> NoReturn:
        """Stop every run now by ending the process (D-12); the ledger hears it first."""
        for run in self.runs.values():
            self.ledger.send({"op": "run_ended", "worker": self.name, "attempt": run.attempt,
                              "end": "stopped", "output": f"stopped by its worker: {reason}"})
            self.events.note("fenced", attempt=run.attempt, reason=reason)
        flush_all()
        print(f"atmostonce temporal worker {self.name}: fenced: {reason}", file=sys.stderr,
              flush=True)
        os._exit(FENCED_EXIT)

    async def stopped(self) -> None:
        """SIGTERM: let the runs in hand end within STOP_GRACE, else tell the ledger they were
        stopped."""
        deadline = time.monotonic() + STOP_GRACE
        while self.runs and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        notices = [self.ledger.request({
            "op": "run_ended", "worker": self.name, "attempt": run.attempt, "end": "stopped",
            "output": "stopped by its worker: the worker was told to stop"})
            for run in self.runs.values()]
        if notices:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.gather(*notices), 0.3)


async def connect_client(server: str, identity: str, plugins: Sequence[Plugin] = ()
                         ) -> Client:
    """The server's client, tried until CONNECT_FOR has passed; `plugins` are Temporal client
    plugins (another mapping's framework)."""
    deadline = time.monotonic() + CONNECT_FOR
    while True:
        try:
            return await Client.connect(server, namespace=mapping.NAMESPACE, identity=identity,
                                        retry_config=RETRY, plugins=list(plugins))
        except Exception as error:
            if time.monotonic() > deadline:
                raise SpecError(f"cannot reach the Temporal server at {server}: "
                                f"{error}") from None
            await asyncio.sleep(0.1)



def stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)


async def tools(args: argparse.Namespace) -> NoReturn:
    name = f"{args.name}-{os.getpid()}"
    stop = asyncio.Event()
    stop_on_signals(stop)
    ledger = await worker_ledger(args.ledger, read_token(Path(args.token_file)), name,
                                  CONNECT_FOR)
    client = await connect_client(args.server, name)
    work = ToolWorker(client, ledger, name, args.lease, not args.no_lease,
                      EventsFile(Path(args.events), name), behaviours())
    worker = Worker(client, task_queue=mapping.TOOLS_QUEUE, activities=[work.call_tool],
                    max_concurrent_activities=args.slots, identity=name,
                    graceful_shutdown_timeout=timedelta(seconds=STOP_GRACE))
    running = asyncio.create_task(worker.run())
    watchdog = asyncio.create_task(work.watch())
    print(ready_line("worker", names=[name], pid=os.getpid()), flush=True)
    await until_stopped(stop, running)
    watchdog.cancel()
    await work.stopped()
    ledger.close()
    leave(0)


async def sessions(args: argparse.Namespace) -> NoReturn:
    from atmostonce.engines.temporal.workflows import WORKFLOWS

    name = f"sessions-{os.getpid()}"
    stop = asyncio.Event()
    stop_on_signals(stop)
    client = await connect_client(args.server, name)
    worker = Worker(client, task_queue=mapping.SESSIONS_QUEUE, workflows=list(WORKFLOWS),
                    identity=name, workflow_runner=RUNNER)
    running = asyncio.create_task(worker.run())
    print(ready_line("sessions", names=[name], pid=os.getpid()), flush=True)
    await until_stopped(stop, running)
    leave(0)


async def until_stopped(stop: asyncio.Event, running: asyncio.Task[None]) -> None:
    """Until SIGTERM, or until the Temporal worker stops by itself (an error: re-raised)."""
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait([stopping, running], return_when=asyncio.FIRST_COMPLETED)
    if running.done():
        running.result()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m atmostonce.engines.temporal.worker")
    roles = parser.add_subparsers(dest="role", required=True)
    tool = roles.add_parser("tools", help="run the tool activity")
    tool.add_argument("--server", required=True, metavar="HOST:PORT")
    add_process_arguments(tool)
    tool.add_argument("--lease", type=float, required=True, metavar="SECONDS")
    tool.add_argument("--no-lease", action="store_true")
    tool.add_argument("--slots", type=int, default=1, metavar="N",
                      help="activities at a time (default 1)")
    session = roles.add_parser("sessions", help="run the session workflows")
    session.add_argument("--server", required=True, metavar="HOST:PORT")
    return parser


def main(argv: Sequence[str] | None = None) -> NoReturn:
    worker_main("temporal worker", _parser(), _role, argv)


def _role(args: argparse.Namespace) -> Coroutine[Any, Any, object]:
    return tools(args) if args.role == "tools" else sessions(args)


if __name__ == "__main__":
    main()
