"""The server's driver: the runtime's effects for the host (`atmostonce.check.host.Host`),
which hands each event to the executor and carries out its commands in order.

Each message from a worker or a client becomes a protocol event stamped with the loop's
monotonic clock (offset so that times recovered from the journal never run backwards), the core
handles it, and the host carries out the commands in order through these effects: `Persist`
goes to the journal by group commit, and every command with an outside effect (`GoAhead`,
`Cancel`, `Publish`, `Reply`, `DropWorker`, and the answers to client requests) waits until
every entry persisted before it is durable (D-5, TC-REC-1); `StartTimer`/`StopTimer` are loop
timers. A breach of one of the protocol's own rules the host judges (a go-ahead whose hand-out
no entry of its batch names, no cancel for a timed-out attempt, other than one reply to a
request) is logged, and the server goes on as the executor says.

The executor runs inside `atmostonce.check.executors.guard`: one that raises, or answers outside the
protocol's types, may have changed half its state, so the server answers the request that led
there with an error saying the executor failed, logs the failure (and its traceback), shows
nothing the failed event led to, and stops with status 1; a restart recovers from what was
durable. A SpecError the executor raises refuses its input and goes back to the sender.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, NoReturn

from atmostonce.check.executors.guard import ProtocolBreach
from atmostonce.check.host.host import Host
from atmostonce.runtime import codec
from atmostonce.runtime.durability import GroupCommit
from atmostonce.runtime.timers import LoopTimers
from atmostonce.runtime.wire import LineProtocol, Message
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import (
    JSON,
    Cancel,
    Command,
    DropWorker,
    Event,
    Executor,
    ExecutorConfig,
    GoAhead,
    NoWork,
    Poll,
    Publish,
    Reply,
    StartTimer,
    TimerKind,
)

log = logging.getLogger("atmostonce.server")

MAX_POLL_WAIT = 1.0


class ExecutorFailed(Exception):
    """The executor raised or broke the protocol; the server stops without showing anything
    the failed event led to."""


class WorkerLink:
    """A worker's connection: the poll it last sent, and whether that poll is held."""

    __slots__ = ("conn", "name", "park", "poll_n")

    def __init__(self, conn: LineProtocol, name: str) -> None:
        self.conn = conn
        self.name = name
        self.poll_n = 0
        self.park: asyncio.TimerHandle | None = None

    def answered(self) -> None:
        if self.park is not None:
            self.park.cancel()
            self.park = None


class ClientLink:
    """A client's connection: its id (which makes request ids unique), whether it holds the
    approver token, and its subscriptions."""

    __slots__ = ("approver", "conn", "id", "subs")

    def __init__(self, conn: LineProtocol, link_id: int, approver: bool) -> None:
        self.conn = conn
        self.id = link_id
        self.approver = approver
        self.subs: dict[str, str] = {}
        """Subscription id -> session id."""


class Driver:
    """Carries events into the executor and its commands out (D-5, D-8, D-12); `Server` adds
    the connections the events come from."""

    def __init__(self, executor: Executor, config: ExecutorConfig, commit: GroupCommit,
                 offset: float, on_fatal: Callable[[BaseException], None]) -> None:
        self.host = Host(self, executor)
        self.on_fatal = on_fatal
        self.failure: str | None = None
        self.config = config
        self.commit = commit
        self.offset = offset
        self.loop = asyncio.get_running_loop()
        self.timers = LoopTimers(self.loop, self._timer_fired)
        self.poll_wait = min(MAX_POLL_WAIT, config.lease / 4)
        self.workers: dict[str, WorkerLink] = {}
        self.parked: dict[WorkerLink, None] = {}
        self.subscribers: dict[str, dict[tuple[ClientLink, str], None]] = {}
        self.requests: dict[str, tuple[ClientLink, object]] = {}
        self._work_maybe = False

    @property
    def executor(self) -> Executor:
        return self.host.executor

    def clock(self) -> float:
        return self.loop.time() + self.offset

    # -- the executor ----------------------------------------------------------------------------

    def feed(self, event: Event) -> None:
        """Hand one event to the executor and carry out its commands. A SpecError is bad input
        and goes back to the sender. An executor that raises, answers with something that is
        not a list of protocol commands or breaks one of the protocol's own rules may have
        changed half its state, so the server stops (a restart recovers from the journal) and
        `ExecutorFailed` tells the sender so; nothing the failed event led to is shown to
        anyone."""
        self._run(type(event).__name__, self.host.feed, event)

    def _timer_fired(self, timer: str) -> None:
        with contextlib.suppress(ExecutorFailed):
            self._run("TimerFired", self.host.fire, timer, self.clock())

    def _run(self, what: str, step: Callable[..., object], *args: Any) -> None:
        if self.failure is not None:
            raise ExecutorFailed(f"{self.failure}; the server is stopping")
        try:
            step(*args)
        except ProtocolBreach as breach:
            refused_input(breach)
            self._fail(f"the executor failed: {breach}", breach.__cause__)
        except ExecutorFailed:
            raise
        except Exception as error:
            self._fail(f"the executor's commands for {what} cannot be carried out: "
                       f"{type(error).__name__}: {error}", error)
        if self._work_maybe:
            self._repoll()

    def _fail(self, line: str, error: BaseException | None = None) -> NoReturn:
        """Stop the server for a failure of the executor: logged (with the traceback of the
        exception behind it, if any), reported to whoever sent the event."""
        log.error("%s", line, exc_info=error)
        self.failure = line
        self.on_fatal(ExecutorFailed(line))
        raise ExecutorFailed(f"{line}; the server is stopping")

    def carry_out(self, commands: list[Command]) -> None:
        """Carry out commands the executor gave outside an event (its recovery)."""
        self.host.carry_out(commands)

    # -- the effects of the executor's commands --------------------------------------------------

    def persist(self, entry: dict[str, JSON]) -> bool:
        self.commit.persist(entry)
        return False

    def start_timer(self, command: StartTimer) -> None:
        if command.kind is TimerKind.QUEUE_TIMEOUT:
            self._work_maybe = True
        self.timers.start(command.timer, command.delay)

    def stop_timer(self, timer: str) -> None:
        self.timers.stop(timer)

    def cut(self, rest: list[Command], handed: list[GoAhead]) -> None:
        raise AssertionError("the runtime's server dies only as a process")

    def broken(self, rule: str, text: str) -> None:
        """Logged, and the server goes on as the executor says: the runtime is judged from
        outside, by its history, as any engine is (a go-ahead before its hand-out was
        durable shows there as D-5's breach)."""
        log.warning("protocol rule broken (%s): %s", rule, text)

    def go_ahead(self, command: GoAhead, persisted: bool) -> None:
        self._go_ahead(command)

    def _go_ahead(self, command: GoAhead) -> None:
        link = self.workers.get(command.worker)
        if link is None:
            return
        self._unpark(link)
        message = {"type": "go_ahead", "n": link.poll_n, "attempt": command.attempt,
                   "key": command.key, "tool": command.tool, "arguments": command.arguments,
                   "lease": command.lease}
        self.commit.then(lambda: send(link.conn, message))

    def no_work(self, command: NoWork) -> None:
        link = self.workers.get(command.worker)
        if link is None:
            return
        if self.poll_wait <= 0:
            link.conn.send({"type": "no_work", "n": link.poll_n})
            return
        self.parked[link] = None
        if link.park is None:
            link.park = self.loop.call_later(self.poll_wait, self._park_over, link)

    def _unpark(self, link: WorkerLink) -> None:
        """The worker's poll is answered, or the worker is gone: its poll is held no more."""
        link.answered()
        self.parked.pop(link, None)

    def _park_over(self, link: WorkerLink) -> None:
        link.park = None
        if self.parked.pop(link, False) is None:
            link.conn.send({"type": "no_work", "n": link.poll_n})

    def _repoll(self) -> None:
        """Attempts were queued: hand them to the workers whose polls are held, oldest first."""
        while self.parked:
            link = next(iter(self.parked))
            del self.parked[link]
            self._work_maybe = False
            try:
                self.feed(Poll(self.clock(), link.name))
            except ExecutorFailed:
                break
            if link in self.parked:
                break
        self._work_maybe = False

    def cancel(self, command: Cancel) -> None:
        link = self.workers.get(command.worker)
        if link is None:
            return
        message = {"type": "cancel", "attempt": command.attempt}
        self.commit.then(lambda: send(link.conn, message))

    def drop_worker(self, command: DropWorker) -> None:
        log.info("worker %s declared lost", command.worker)
        link = self.workers.pop(command.worker, None)
        if link is None:
            return
        self._unpark(link)
        self.commit.then(lambda: link.conn.close("declared lost"))

    def publish(self, command: Publish) -> None:
        event = codec.finished_json(command.event)
        session_id = command.event.session_id
        self.commit.then(lambda: self._fan_out(session_id, event))

    def _fan_out(self, session_id: str, event: dict[str, Any]) -> None:
        for link, sub in self.subscribers.get(session_id, {}):
            link.conn.send({"type": "event", "sub": sub, "event": event})

    def reply(self, command: Reply) -> None:
        waiting = self.requests.pop(command.request, None)
        if waiting is None:
            return
        link, request_id = waiting
        result = {"accepted": command.ok, "text": command.text}
        self.commit.then(lambda: self._send_result(link, request_id, result))

    def _send_result(self, link: ClientLink, request_id: object, result: dict[str, Any]) -> None:
        link.conn.send({"type": "reply", "id": request_id, "ok": True, "result": result})


def refused_input(breach: ProtocolBreach) -> None:
    """An executor that raises a SpecError refuses its input as bad (a malformed request, a
    journal it cannot recover from): that goes back to the sender, not a failure."""
    if isinstance(breach.__cause__, SpecError):
        raise breach.__cause__


def send(conn: LineProtocol, message: Message) -> None:
    """Send `message` on `conn`, for a callback that runs once what came before is durable."""
    conn.send(message)
