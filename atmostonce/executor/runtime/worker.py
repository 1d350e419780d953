"""A worker process: runs tool calls for the server, one at a time per slot, only on a go-ahead.

Each slot is one worker to the executor, named `{name}-{pid}` (`{name}-{pid}-{i}` with several
slots), so two processes never share a name. A slot connects and says which attempts it still
has (`Connected.running`: going, or finished with a result not delivered yet), polls when idle,
starts a tool only on its go-ahead (D-5), logs the run's start and end to the effect ledger,
sends `started`, heartbeats while the tool runs and `finished` when it returns or reports a
failure. A cancel request is passed on to the tool, which may go on (TC-AMO-3). After a lost
connection or a server restart the slot connects again once its run is over, and then delivers
the run's result or failure as a late one (D-8, D-12).

Self-fencing (D-12): a slot's lease runs from the moment it sent the latest message the server
acknowledged. When a run is going and the lease has run out, the process exits at once with
`os._exit(FENCED_EXIT)`, after telling the ledger its runs stopped; the lease is shorter than the
server's heartbeat timeout, so a cut-off worker never runs on after the server declares it
lost. The ledger also refuses a write sent after the lease deadline, which closes the gap of a
process paused between its check and its write.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import NoReturn

from atmostonce.executor.runtime import codec
from atmostonce.executor.runtime.ledger_client import AsyncLedger
from atmostonce.executor.runtime.tools import Behaviour, Fenced, WriteResult, run_tool
from atmostonce.executor.runtime.wire import (
    WIRE_VERSION,
    LineProtocol,
    Message,
    connect,
    ready_line,
)
from atmostonce.spec.errors import SpecError

log = logging.getLogger("atmostonce.worker")

FENCED_EXIT = 3
"""The exit status of a worker that stopped its runs because its lease ran out (D-12)."""
RECONNECT_FIRST = 0.05
RECONNECT_MAX = 0.2


class Run:
    """One run of a tool at this slot: going, or over with a result not yet delivered."""

    __slots__ = ("arguments", "attempt", "cancelled", "key", "result", "slot", "task", "tool")

    def __init__(self, slot: Slot, attempt: str, key: str, tool: str, arguments: str) -> None:
        self.slot = slot
        self.attempt = attempt
        self.key = key
        self.tool = tool
        self.arguments = arguments
        self.cancelled = asyncio.Event()
        self.result: tuple[bool, str] | None = None
        self.task: asyncio.Task[None] | None = None

    @property
    def going(self) -> bool:
        return self.result is None

    async def write(self, payload: str) -> WriteResult:
        """The tool's write, carrying the lease deadline; past it, the process stops (D-12)."""
        slot = self.slot
        deadline = slot.lease_deadline()
        if time.monotonic() > deadline:
            slot.process.fence(f"lease over before a write of {self.attempt}")
        answer = await slot.process.ledger.request({
            "op": "write", "worker": slot.name, "attempt": self.attempt, "key": self.key,
            "tool": self.tool, "payload": payload, "deadline": deadline})
        if answer.get("fenced"):
            raise Fenced(self.attempt)
        return WriteResult(bool(answer.get("applied")), int(answer.get("count", 0)))


class Slot:
    """One worker as the executor sees it: one connection at a time, one run at a time."""

    def __init__(self, process: WorkerProcess, name: str) -> None:
        self.process = process
        self.name = name
        self.conn: LineProtocol | None = None
        self.inbox: asyncio.Queue[Message | None] = asyncio.Queue()
        self.run: Run | None = None
        self.lease = 0.0
        self.anchor = 0.0
        self.welcomed = asyncio.Event()
        self._numbers = itertools.count(1)
        self._sent: dict[int, float] = {}
        self._beat: asyncio.TimerHandle | None = None

    # -- the lease (D-12) ---------------------------------------------------------------------

    def lease_deadline(self) -> float:
        return self.anchor + self.lease

    def _send_numbered(self, message: Message) -> int:
        n = next(self._numbers)
        self._sent[n] = time.monotonic()
        if self.conn is not None:
            self.conn.send({**message, "n": n})
        return n

    def _heard(self, n: object) -> None:
        """The server had heard message `n`: the lease runs from when it was sent."""
        if not isinstance(n, int):
            return
        sent = self._sent
        at = sent.get(n)
        if at is None:
            return
        self.anchor = max(self.anchor, at)
        for old in [k for k in sent if k <= n]:
            del sent[old]

    # -- messages -----------------------------------------------------------------------------

    def _on_message(self, conn: LineProtocol, message: Message) -> None:
        if conn is not self.conn:
            return
        kind = message.get("type")
        if kind == "ack":
            self._heard(message.get("n"))
        elif kind == "cancel":
            run = self.run
            if run is not None and run.attempt == message.get("attempt"):
                run.cancelled.set()
        elif kind == "error":
            log.warning("%s: the server says: %s", self.name, message.get("error"))
        else:
            self.inbox.put_nowait(message)

    def _on_close(self, conn: LineProtocol) -> None:
        if conn is self.conn:
            self.inbox.put_nowait(None)

    async def _next(self) -> Message:
        message = await self.inbox.get()
        if message is None:
            raise ConnectionError("connection lost")
        return message

    # -- the slot's life ----------------------------------------------------------------------

    async def main(self) -> None:
        delay = RECONNECT_FIRST
        while not self.process.stopping or self.run is not None:
            try:
                self.inbox = asyncio.Queue()
                self.conn = await connect(*self.process.server, self._on_message, self._on_close)
            except OSError:
                if self.process.stopping and (self.run is None or not self.run.going):
                    return
                await asyncio.sleep(delay)
                delay = min(RECONNECT_MAX, delay * 2)
                continue
            delay = RECONNECT_FIRST
            try:
                await self._session()
            except ConnectionError as error:
                log.info("%s: %s; connecting again", self.name, error)
            except Exception:
                log.exception("%s: the session failed; connecting again", self.name)
                await asyncio.sleep(delay)
            finally:
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
            await self._outlive_run()
            if self.process.stopping and self.run is None:
                return

    async def _outlive_run(self) -> None:
        """Cut off from the server, a slot does not connect again while its run goes on: the
        server may already count the attempt lost, so the run ends first, by itself or by the
        lease watchdog fencing the process (D-12)."""
        run = self.run
        if run is not None and run.going and run.task is not None:
            await asyncio.wait([run.task])

    async def _session(self) -> None:
        run = self.run
        self._send_numbered({"type": "hello", "wire": WIRE_VERSION, "role": "worker",
                             "worker": self.name, "running": [run.attempt] if run else []})
        welcome = await self._next()
        while welcome.get("type") == "run_over":
            welcome = await self._next()
        if welcome.get("type") != "welcome":
            raise ConnectionError(f"expected a welcome, got {welcome!r:.200}")
        self._heard(welcome.get("n"))
        self.welcomed.set()
        while True:
            if self.run is not None:
                if self.run.going:
                    message = await self._next()
                    if message.get("type") != "run_over":
                        continue
                self._deliver()
                continue
            if self.process.stopping:
                return
            n = self._send_numbered({"type": "poll"})
            answer = await self._next()
            while answer.get("type") not in ("go_ahead", "no_work") or answer.get("n") != n:
                answer = await self._next()
            self._heard(n)
            if answer.get("type") == "go_ahead":
                self._start(answer)

    def _start(self, go: Message) -> None:
        """Start the tool on its go-ahead, and only then (D-5); a go-ahead that arrives after the
        lease ran out is refused by reconnecting, which tells the server the attempt is not
        running here (D-12)."""
        try:
            run = Run(self, codec.text(go, "attempt"), codec.text(go, "key"),
                      codec.text(go, "tool"), codec.text(go, "arguments"))
            lease = go.get("lease")
            if isinstance(lease, bool) or not isinstance(lease, int | float) or lease <= 0:
                raise SpecError(f"lease must be a positive number, got {lease!r}")
        except SpecError as error:
            log.warning("%s: ignoring a malformed go-ahead: %s", self.name, error)
            return
        if time.monotonic() > self.anchor + lease:
            raise ConnectionError(f"the go-ahead for {run.attempt} came after the lease; the "
                                  "server may have declared this worker lost, so it never runs")
        self.lease = float(lease)
        self.run = run
        self.process.ledger.send({"op": "run_started", "worker": self.name,
                                  "attempt": run.attempt, "key": run.key, "tool": run.tool})
        self._send_numbered({"type": "started", "attempt": run.attempt})
        self._schedule_beat()
        run.task = asyncio.create_task(self._execute(run))

    async def _execute(self, run: Run) -> None:
        try:
            ok, output = await run_tool(run.tool, run.arguments, run, self.process.behaviours)
        except Fenced:
            self.process.fence(f"the ledger refused a write of {run.attempt}: lease over")
        except Exception as error:  # a tool that raises reports a failure (D-3)
            ok, output = False, f"{run.tool} raised {type(error).__name__}: {error}"
        if time.monotonic() > self.lease_deadline():
            self.process.fence(f"lease over when {run.attempt} ended")
        self.process.ledger.send({"op": "run_ended", "worker": self.name,
                                  "attempt": run.attempt,
                                  "end": "returned" if ok else "tool_failed", "output": output})
        run.result = (ok, output)
        if self._beat is not None:
            self._beat.cancel()
            self._beat = None
        if self.conn is not None:
            self.inbox.put_nowait({"type": "run_over"})

    def _deliver(self) -> None:
        run = self.run
        assert run is not None
        assert run.result is not None
        if self.conn is None or not self.conn.send({
                "type": "finished", "attempt": run.attempt, "ok": run.result[0],
                "output": run.result[1]}):
            raise ConnectionError("connection lost before the result went out")
        self.run = None

    def _schedule_beat(self) -> None:
        interval = self.process.heartbeat_interval or self.lease / 4
        self._beat = asyncio.get_running_loop().call_later(interval, self._heartbeat)

    def _heartbeat(self) -> None:
        self._beat = None
        run = self.run
        if run is None or not run.going:
            return
        if self.conn is not None:
            self._send_numbered({"type": "heartbeat", "attempt": run.attempt})
        self._schedule_beat()


class WorkerProcess:
    """The slots of one process, its ledger connection and its lease watchdog."""

    def __init__(self, server: tuple[str, int], ledger: tuple[str, int], name: str,
                 slots: int = 1, behaviours: Mapping[str, Behaviour] | None = None,
                 heartbeat_interval: float | None = None) -> None:
        if slots < 1:
            raise SpecError(f"a worker needs at least one slot, got {slots}")
        if not name or any(c.isspace() for c in name):
            raise SpecError(f"worker name {name!r} must be non-empty, without white space")
        self.server = server
        self.ledger = AsyncLedger(*ledger)
        self.behaviours = dict(behaviours or {})
        self.heartbeat_interval = heartbeat_interval
        pid = os.getpid()
        names = [f"{name}-{pid}"] if slots == 1 else [f"{name}-{pid}-{i}" for i in range(slots)]
        self.names = names
        self.slots: list[Slot] = []
        self.stopping = False

    def fence(self, reason: str) -> NoReturn:
        """Stop every run now by ending the process (D-12); the ledger hears it first."""
        for slot in self.slots:
            run = slot.run
            if run is not None and run.going:
                self.ledger.send({"op": "run_ended", "worker": slot.name,
                                  "attempt": run.attempt, "end": "stopped",
                                  "output": f"stopped by its worker: {reason}"})
        print(f"atmostonce worker {' '.join(self.names)}: fenced: {reason}", file=sys.stderr,
              flush=True)
        os._exit(FENCED_EXIT)

    def _watch(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            run = slot.run
            if run is not None and run.going and now > slot.lease_deadline():
                self.fence(f"no word from the server for the lease ({slot.lease:g} s) while "
                           f"running {run.attempt}")
        asyncio.get_running_loop().call_later(self._watch_every(), self._watch)

    def _watch_every(self) -> float:
        leases = [s.lease for s in self.slots if s.lease > 0]
        return max(0.005, min(leases) / 20) if leases else 0.02

    async def run(self, stop: asyncio.Event,
                  announce: Callable[[str], None] | None = None) -> int:
        """Work until `stop` is set, then finish the runs in hand and return 0."""
        deadline = time.monotonic() + 10.0
        while True:
            try:
                await self.ledger.connect()
                break
            except SpecError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
        self.slots = [Slot(self, n) for n in self.names]
        loop = asyncio.get_running_loop()
        loop.call_later(0.02, self._watch)
        tasks = [asyncio.create_task(s.main()) for s in self.slots]
        welcomed = asyncio.create_task(_all_set([s.welcomed for s in self.slots]))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait([welcomed, stopped], return_when=asyncio.FIRST_COMPLETED)
        if welcomed.done() and announce is not None:
            announce(ready_line("worker", names=self.names, pid=os.getpid()))
        await stopped
        welcomed.cancel()
        self.stopping = True
        await asyncio.gather(*tasks, return_exceptions=True)
        self.ledger.close()
        return 0


async def _all_set(events: list[asyncio.Event]) -> None:
    for event in events:
        await event.wait()

