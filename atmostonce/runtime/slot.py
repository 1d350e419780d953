"""One slot of a worker process: one worker to the executor, with one connection and one run
at a time.

A slot connects and says which attempts it still has (`Connected.running`: going, or finished
with a result not delivered yet), polls when idle, starts a tool only on its go-ahead (D-5),
logs the run's start and end to the effect ledger, sends `started`, heartbeats while the tool
runs and `finished` when it returns or reports a failure. A cancel request is passed on to the
tool, which may go on (TC-AMO-3). After a lost connection or a server restart the slot connects
again once its run is over, and then delivers the run's result or failure as a late one (D-8,
D-12).

The slot's lease runs from the moment it sent the latest message the server acknowledged; a
write carries the lease deadline, and past it the process fences itself (`worker`, D-12).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from typing import NoReturn, Protocol

from atmostonce.runtime import codec
from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.registry import Fenced, Registry, WriteResult, run_call
from atmostonce.runtime.retry import Backoff, wait_to_retry
from atmostonce.runtime.wire import (
    HELLO_TIMEOUT,
    SERVER,
    LineProtocol,
    Message,
    check_welcome,
    connect,
    hello,
    not_our_wire,
)
from atmostonce.spec.errors import SpecError

log = logging.getLogger("atmostonce.worker")

POLL_ANSWER = HELLO_TIMEOUT
"""Seconds a poll may go unanswered (the server holds it at most a second) before the worker
counts the connection as lost."""


class Process(Protocol):
    """What a slot needs of the worker process it belongs to (`worker.WorkerProcess`)."""

    server: tuple[str, int]
    server_address: str
    token: str
    incarnation: str
    tools: Registry
    heartbeat_interval: float | None
    give_up_after: float
    ledger: AsyncLedger
    stopping: bool

    def fence(self, reason: str) -> NoReturn:
        """Stop every run now by ending the process (D-12)."""


class SlotRun:
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

    def __init__(self, process: Process, name: str) -> None:
        self.process = process
        self.name = name
        self.conn: LineProtocol | None = None
        self.inbox: asyncio.Queue[Message | None] = asyncio.Queue()
        self.run: SlotRun | None = None
        self.lease = 0.0
        self.anchor = 0.0
        self.welcomed = asyncio.Event()
        self.session_open = False
        """Whether the server welcomed this slot on its current connection."""
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
        elif kind == "error" and self.session_open:
            log.warning("%s: the server says: %s", self.name, message.get("error"))
        else:
            self.inbox.put_nowait(message)

    def _on_close(self, conn: LineProtocol) -> None:
        if conn is self.conn:
            self.inbox.put_nowait(None)

    async def _next(self, within: float | None = None) -> Message:
        """The next message from the server; ConnectionError when the connection goes, and
        TimeoutError after `within` seconds."""
        if within is None:
            message = await self.inbox.get()
        else:
            async with asyncio.timeout(within):
                message = await self.inbox.get()
        if message is None:
            conn = self.conn
            if conn is not None and conn.garbled and not self.session_open:
                raise not_our_wire(conn.garbled, SERVER, self.process.server_address)
            raise ConnectionError("connection lost")
        return message

    # -- the slot's life ----------------------------------------------------------------------

    async def main(self) -> None:
        """Connect, work, and connect again after a loss, with back-off, until the process stops
        this slot (by cancelling it), gives up, or meets a wrong peer (WrongPeer)."""
        retry = Backoff()
        while not (self.process.stopping and self.run is None):
            try:
                await self._connect()
            except (OSError, ConnectionError, TimeoutError) as error:
                self._close()
                await wait_to_retry(self.name, "the atmostonce server",
                                    self.process.server_address, error, retry,
                                    self.process.give_up_after)
                continue
            retry = Backoff()
            try:
                await self._session()
            except ConnectionError as error:
                log.info("%s: %s; connecting again", self.name, error)
            except TimeoutError:
                log.info("%s: no answer from the server in time; connecting again", self.name)
            finally:
                self._close()
            await self._outlive_run()

    def _close(self) -> None:
        self.session_open = False
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    async def _outlive_run(self) -> None:
        """Cut off from the server, a slot does not connect again while its run goes on: the
        server may already count the attempt lost, so the run ends first, by itself or by the
        lease watchdog fencing the process (D-12)."""
        run = self.run
        if run is not None and run.going and run.task is not None:
            await asyncio.wait([run.task])

    async def _connect(self) -> None:
        """Open a connection and be welcomed by the server within HELLO_TIMEOUT; WrongPeer when
        what answers is not the server or refuses this worker's token."""
        self.inbox = asyncio.Queue()
        self.conn = await connect(*self.process.server, self._on_message, self._on_close)
        run = self.run
        self._send_numbered(hello("worker", self.process.token, worker=self.name,
                                  incarnation=self.process.incarnation,
                                  running=[run.attempt] if run else []))
        answer = await self._next(HELLO_TIMEOUT)
        while answer.get("type") == "run_over":
            answer = await self._next(HELLO_TIMEOUT)
        check_welcome(answer, SERVER, self.process.server_address)
        self.session_open = True
        self._heard(answer.get("n"))
        self.welcomed.set()

    async def _session(self) -> None:
        """Poll for work, run it, deliver its result. Every wait is bounded: a poll unanswered
        within POLL_ANSWER seconds counts as a lost connection, and a run in hand ends by
        itself or by the lease watchdog, which puts its end in the inbox or ends the
        process."""
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
            deadline = time.monotonic() + POLL_ANSWER
            answer = await self._next(POLL_ANSWER)
            while answer.get("type") not in ("go_ahead", "no_work") or answer.get("n") != n:
                answer = await self._next(max(0.0, deadline - time.monotonic()))
            self._heard(n)
            if answer.get("type") == "go_ahead":
                self._start(answer)

    def _start(self, go: Message) -> None:
        """Start the tool on its go-ahead, and only then (D-5); a go-ahead that arrives after the
        lease ran out is refused by reconnecting, which tells the server the attempt is not
        running here (D-12)."""
        try:
            run = SlotRun(self, codec.text(go, "attempt"), codec.text(go, "key"),
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
        self._send_numbered({"type": "started", "attempt": run.attempt})
        self._schedule_beat()
        run.task = asyncio.create_task(self._execute(run))
        run.task.add_done_callback(lambda task: self._ended(run, task))

    async def _execute(self, run: SlotRun) -> None:
        """Put the run's start on record at the ledger, and only then run the tool, so the
        ledger never holds a write before the run that made it; a start the ledger did not
        record means the tool did not run, which is the failure the call reports."""
        try:
            await self.process.ledger.request({
                "op": "run_started", "worker": self.name, "attempt": run.attempt,
                "key": run.key, "tool": run.tool})
        except SpecError as error:
            self._over(run, False, f"{run.tool} did not run: the effect ledger did not record "
                       f"its start ({error})")
            return
        try:
            ok, output = await run_call(self.process.tools, run.tool, run.arguments, run)
        except Fenced:
            self.process.fence(f"the ledger refused a write of {run.attempt}: lease over")
        except Exception as error:  # a tool that raises reports a failure (D-3)
            ok, output = False, f"{run.tool} raised {type(error).__name__}: {error}"
        if time.monotonic() > self.lease_deadline():
            self.process.fence(f"lease over when {run.attempt} ended")
        self.process.ledger.send({"op": "run_ended", "worker": self.name,
                                  "attempt": run.attempt,
                                  "end": "returned" if ok else "tool_failed", "output": output})
        self._over(run, ok, output)

    def _ended(self, run: SlotRun, task: asyncio.Task[None]) -> None:
        """A run's task that ended without a result (it raised, or was cancelled) still ends
        the run, so the slot waiting for it never waits on."""
        if run.going:
            error = None if task.cancelled() else task.exception()
            why = "cancelled" if error is None else f"{type(error).__name__}: {error}"
            self._over(run, False, f"{run.tool} stopped by its worker: {why}")

    def _over(self, run: SlotRun, ok: bool, output: str) -> None:
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
