"""The server of the simulation: it hosts the executor under test, feeds it events through
the protocol and carries out its commands in order.

It keeps the journal of every `Persist`, runs the executor's timers (one heap entry per timer,
moved lazily when a restart of the timer pushes it later), routes go-aheads to workers and
records what the checkers need: hand-outs and whether their Persist came first (D-5), records
published, cancels, workers declared lost, timers that matter. A restart (D-8) builds a fresh
executor with the same factory and hands it the whole journal; connections and timers are lost,
and a restart inside a batch of commands stops right after a Persist.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from heapq import heappush
from typing import Any, Protocol

from atmostonce.check.executors import guard
from atmostonce.check.history import entries as h
from atmostonce.sim.loop import Loop
from atmostonce.sim.network import Conn, Network
from atmostonce.spec import protocol as p
from atmostonce.spec.session import ToolCallStatus

_START_TIMER = p.StartTimer
_STOP_TIMER = p.StopTimer
_PERSIST = p.Persist
_GO_AHEAD = p.GoAhead
_NO_WORK = p.NoWork
_PUBLISH = p.Publish
_CANCEL = p.Cancel
_DROP = p.DropWorker
_QUEUE_TIMEOUT = p.TimerKind.QUEUE_TIMEOUT
_APPROVAL_DEADLINE = p.TimerKind.APPROVAL_DEADLINE
_HEARTBEAT_TIMEOUT = p.TimerKind.HEARTBEAT_TIMEOUT


def _persisted(cmd: p.GoAhead, journal: list[dict[str, p.JSON]], first: int) -> bool:
    """D-5: an entry persisted earlier in the batch (the journal's from `first` on) names both
    the go-ahead's attempt and its worker."""
    attempt = cmd.attempt
    worker = cmd.worker
    return any(_names(journal[i], attempt, worker) for i in range(first, len(journal)))


def _names(entry: dict[str, p.JSON], attempt: str, worker: str) -> bool:
    """Whether a journal entry names both the attempt and the worker (D-5)."""
    values = entry.values()
    if attempt in values and worker in values:
        return True
    return _mentions(entry, attempt) and _mentions(entry, worker)


def _mentions(value: object, text: str) -> bool:
    """Whether a journal entry holds `text` as a value, at any depth."""
    if isinstance(value, str):
        return value == text
    if isinstance(value, dict):
        return any(_mentions(v, text) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, text) for v in value)
    return False


class Asked(Protocol):
    """A call the agent's model asked, as the server's records name it."""

    @property
    def key(self) -> str:
        """The call's key: its session, turn and call ids."""
        ...


class ExecutorHost:
    """The server side of the simulation: the executor, its journal and its timers."""

    __slots__ = ("calls", "config", "conns", "crash_armed", "down", "executor", "factory",
                 "journal", "loop", "on_record", "restarts", "server_closes", "timers")

    def __init__(self, loop: Loop, network: Network, factory: p.ExecutorFactory,
                 config: p.ExecutorConfig) -> None:
        self.loop = loop
        self.down = network.down
        self.server_closes = network.server_closes
        self.factory = factory
        self.config = config
        self.executor: p.Executor
        self.journal: list[dict[str, p.JSON]] = []
        self.timers: dict[str, list[Any]] = {}
        self.conns: dict[str, Conn] = {}
        """The connections open at the server, by the worker name the executor sees."""
        self.restarts = 0
        self.crash_armed = False
        """The next restart fault comes inside a batch of commands, right after a Persist."""
        self.calls: Mapping[str, Asked]
        """The calls the agent's model asked, by their arguments (the engine sets them, and
        `on_record`, once the agents are built)."""
        self.on_record: Callable[[str, ToolCallStatus], None]
        """How a call's published record reaches the agent's model."""

    def start(self) -> None:
        """Build the executor."""
        self.executor = guard.build(self.factory, self.config)

    def accept(self, conn: Conn) -> None:
        """A worker connected: the server knows `conn` from now on."""
        self.conns[conn.id] = conn

    def restart(self) -> None:
        """D-8: the server dies and comes back from its journal."""
        self.crash_armed = False
        self.restarts += 1
        now = self.loop.now
        self.loop.record(h.ServerRestarted(now, len(self.journal)))
        conns = self.conns
        self.conns = {}
        self.timers = {}
        for conn in conns.values():
            self.server_closes(conn)
        self.executor = guard.build(self.factory, self.config)
        self.carry_out(self.executor.recover(list(self.journal), now), False)

    def feed(self, event: p.Event, crashable: bool = False) -> None:
        commands = self.executor.handle(event)
        if commands:
            self.carry_out(commands, crashable)

    def request(self, event: p.Event, request: str) -> p.Reply | None:
        """Feed a request (an answer, a user message) and return its reply, which is recorded
        before the other commands are carried out."""
        commands = self.executor.handle(event)
        reply = None
        for cmd in commands:
            if type(cmd) is p.Reply and cmd.request == request:
                reply = cmd
                break
        if reply is not None:
            commands = [c for c in commands if c is not reply]
        self._on_reply(event, reply)
        if commands:
            self.carry_out(commands, False)
        return reply

    def _on_reply(self, event: p.Event, reply: p.Reply | None) -> None:
        ok = reply.ok if reply is not None else False
        text = reply.text if reply is not None else ""
        loop = self.loop
        if isinstance(event, p.Answer):
            loop.record(h.ApprovalAnswered(loop.now, event.key, event.approve, ok, text))
        elif isinstance(event, p.UserMessage):
            loop.record(h.UserMessageSent(loop.now, event.session_id, event.text, ok))

    def carry_out(self, commands: list[p.Command], crashable: bool) -> None:
        """Carry out the executor's commands in order (the protocol's contract). The entries
        this batch persisted are the journal's from `first` on."""
        journal = self.journal
        first = len(journal)
        last = len(commands) - 1
        for i, cmd in enumerate(commands):
            kind = type(cmd)
            if kind is _START_TIMER:
                self._start_timer(cmd)  # type: ignore[arg-type]
            elif kind is _PERSIST:
                journal.append(cmd.entry)  # type: ignore[attr-defined]
                if self.crash_armed and crashable and i < last:
                    self._die_in_batch(commands[i + 1:], journal[first:])
                    return
            elif kind is _STOP_TIMER:
                self.timers.pop(cmd.timer, None)  # type: ignore[attr-defined]
            elif kind is _GO_AHEAD:
                self._go_ahead(cmd, journal, first)  # type: ignore[arg-type]
            elif kind is _NO_WORK:
                conn = self.conns.get(cmd.worker)  # type: ignore[attr-defined]
                if conn is not None:
                    self.down(conn, cmd)
            elif kind is _PUBLISH:
                self._publish(cmd.event)  # type: ignore[attr-defined]
            elif kind is _CANCEL:
                loop = self.loop
                loop.record(h.Cancelled(loop.now, cmd.worker, cmd.attempt))  # type: ignore[attr-defined]
            elif kind is _DROP:
                self._drop(cmd.worker)  # type: ignore[attr-defined]

    def _die_in_batch(self, rest: list[p.Command], persisted: list[dict[str, p.JSON]]) -> None:
        """The server dies right after a Persist: the later commands are never carried out,
        but a hand-out already persisted counts as reached (D-5)."""
        for cmd in rest:
            if isinstance(cmd, p.GoAhead) and _persisted(cmd, persisted, 0):
                self._hand_out(cmd, True, False)
        self.restart()

    def _go_ahead(self, cmd: p.GoAhead, journal: list[dict[str, p.JSON]], first: int) -> None:
        self._hand_out(cmd, _persisted(cmd, journal, first), True)
        conn = self.conns.get(cmd.worker)
        if conn is not None:
            self.down(conn, cmd)

    def _hand_out(self, cmd: p.GoAhead, first: bool, sent: bool) -> None:
        call = self.calls.get(cmd.arguments)
        loop = self.loop
        loop.record(h.HandedOut(loop.now, cmd.worker, cmd.attempt, cmd.key, cmd.tool, first,
                                call.key if call is not None else cmd.key, sent))

    def _publish(self, event: Any) -> None:
        key = f"{event.session_id}/{event.turn_id}/{event.tool_call_id}"
        status = event.status
        loop = self.loop
        loop.record(h.RecordPublished(loop.now, key, status, event.error))
        self.on_record(key, status)

    def _drop(self, worker: str) -> None:
        loop = self.loop
        loop.record(h.WorkerDeclaredLost(loop.now, worker))
        conn = self.conns.pop(worker, None)
        if conn is not None:
            self.server_closes(conn)

    # -- timers: one heap entry per timer, moved lazily when a restart pushes it later -----------

    def _start_timer(self, cmd: p.StartTimer) -> None:
        """A timer record is [deadline, the deadline of its heap entry, the command]."""
        loop = self.loop
        now = loop.now
        deadline = now + cmd.delay
        name = cmd.timer
        rec = self.timers.get(name)
        kind = cmd.kind
        if rec is not None and kind is _HEARTBEAT_TIMEOUT and deadline >= rec[1]:
            rec[0] = deadline
            rec[2] = cmd
            return
        if kind is _QUEUE_TIMEOUT or kind is _APPROVAL_DEADLINE:
            loop.record(h.TimerStarted(now, kind, cmd.subject, _key_of(cmd)))
        if rec is None:
            rec = [deadline, deadline, cmd]
            self.timers[name] = rec
            loop.seq += 1
            heappush(loop.queue, (deadline, loop.seq, self._timer, name, rec))
            return
        rec[0] = deadline
        rec[2] = cmd
        if deadline < rec[1]:
            rec[1] = deadline
            loop.seq += 1
            heappush(loop.queue, (deadline, loop.seq, self._timer, name, rec))

    def _timer(self, name: str, rec: list[Any]) -> None:
        if self.timers.get(name) is not rec:
            return
        deadline = rec[0]
        loop = self.loop
        now = loop.now
        if deadline > now:
            rec[1] = deadline
            loop.seq += 1
            heappush(loop.queue, (deadline, loop.seq, self._timer, name, rec))
            return
        del self.timers[name]
        cmd = rec[2]
        loop.record(h.TimerFired(now, cmd.kind, cmd.subject, _key_of(cmd)))
        self.feed(p.TimerFired(now, name), True)


def _key_of(cmd: p.StartTimer) -> str:
    """The call a timer concerns: its key, or the call's key that starts an attempt's id."""
    return cmd.key or cmd.subject.partition("#")[0]
