"""The server of the simulation: the simulator's effects for the host
(`atmostonce.check.host.Host`), which carries out the executor's commands in order.

It keeps the journal of every `Persist`, runs the executor's timers on the simulated clock (one
heap entry per timer, moved lazily when a restart of the timer pushes it later), sends the
workers their go-aheads, cancels and no-work answers over its network, and records what the
checkers need: hand-outs and whether their Persist came first (the host's D-5 judgement),
records published, cancels, workers declared lost, timers that matter. A restart (D-8) builds a
fresh executor with the same factory and hands it the whole journal; connections and timers
are lost, and a restart inside a batch of commands stops right after a Persist.

The simulator's verdicts come from its history, as an engine's do: a go-ahead before its
hand-out was persisted and a time-out without its cancel are there for the history checkers to
judge (a restart in between excuses the cancel); a breach of the host's other rules ends the
run as a protocol breach.
"""

from __future__ import annotations

from collections.abc import Mapping
from heapq import heappush
from typing import Any, Protocol

from atmostonce.check.executors import guard
from atmostonce.check.history import entries as h
from atmostonce.check.host import rules
from atmostonce.check.host.host import Host
from atmostonce.sim.loop import Loop
from atmostonce.sim.members import APPROVAL_DEADLINE, HEARTBEAT_TIMEOUT, QUEUE_TIMEOUT
from atmostonce.sim.network import Conn, Network
from atmostonce.spec import protocol as p

_JUDGED_BY_HISTORY = frozenset({rules.GO_AHEAD_PERSISTED, rules.CANCEL_ON_TIMEOUT})
"""The host's rules the simulated history shows the evidence of, for its checkers."""


class Asked(Protocol):
    """A call the agent's model asked, as the server's records name it."""

    @property
    def key(self) -> str:
        """The call's key: its session, turn and call ids."""
        ...


class SimServer:
    """The server side of the simulation: the host of the executor under test, its journal,
    its timers and its network to the workers."""

    __slots__ = ("asking", "calls", "config", "conns", "crash_armed", "factory", "host", "journal",
                 "late_until", "loop", "network", "restarts", "timers")

    def __init__(self, loop: Loop, factory: p.ExecutorFactory, config: p.ExecutorConfig,
                 calls: Mapping[str, Asked]) -> None:
        """`calls`: the calls the agent's model asked, by their arguments, as the agents fill
        it."""
        self.loop = loop
        self.factory = factory
        self.config = config
        self.calls = calls
        self.host = Host(self)
        self.network = Network(loop, self.host.feed)
        self.journal: list[dict[str, p.JSON]] = []
        self.timers: dict[str, list[Any]] = {}
        """The heap bookkeeping of each running timer: [deadline, the deadline of its heap
        entry, the command]."""
        self.conns: dict[str, Conn] = {}
        """The connections open at the server, by the worker name the executor sees."""
        self.restarts = 0
        self.crash_armed = False
        """The next restart fault comes inside a batch of commands, right after a Persist."""
        self.late_until = 0.0
        """Until then a timer that comes due fires only then, after what the server handles
        meanwhile (`late_timers`)."""
        self.asking: p.Answer | p.UserMessage
        """The request being fed, whose reply `reply` records."""

    @property
    def executor(self) -> p.Executor:
        return self.host.executor

    def start(self) -> None:
        """Build the executor."""
        self.host.start(guard.build(self.factory, self.config))

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
        closes = self.network.server_closes
        for conn in conns.values():
            closes(conn)
        self.host.restart(guard.build(self.factory, self.config), list(self.journal), now)

    def feed(self, event: p.Event) -> None:
        self.host.feed(event)

    def request(self, event: p.Answer | p.UserMessage) -> None:
        """Feed a request (an answer, a user message): its reply is recorded before the other
        commands are carried out."""
        self.asking = event
        self.host.request(event)

    # -- the effects of the executor's commands ----------------------------------------------------

    def persist(self, entry: dict[str, p.JSON]) -> bool:
        self.journal.append(entry)
        return self.crash_armed

    def cut(self, rest: list[p.Command], handed: list[p.GoAhead]) -> None:
        """The server dies right after a Persist: the later commands are never carried out,
        but a hand-out already persisted counts as reached (D-5)."""
        for go in handed:
            self._hand_out(go, True, False)
        self.restart()

    def go_ahead(self, command: p.GoAhead, persisted: bool) -> None:
        self._hand_out(command, persisted, True)
        conn = self.conns.get(command.worker)
        if conn is not None:
            self.network.down(conn, command)

    def _hand_out(self, cmd: p.GoAhead, first: bool, sent: bool) -> None:
        call = self.calls.get(cmd.arguments)
        loop = self.loop
        loop.record(h.HandedOut(loop.now, cmd.worker, cmd.attempt, cmd.key, cmd.tool, first,
                                call.key if call is not None else cmd.key, sent))

    def no_work(self, command: p.NoWork) -> None:
        conn = self.conns.get(command.worker)
        if conn is not None:
            self.network.down(conn, command)

    def cancel(self, command: p.Cancel) -> None:
        loop = self.loop
        loop.record(h.Cancelled(loop.now, command.worker, command.attempt))

    def publish(self, command: p.Publish) -> None:
        event = command.event
        key = f"{event.session_id}/{event.turn_id}/{event.tool_call_id}"
        status = event.status
        loop = self.loop
        loop.record(h.RecordPublished(loop.now, key, status, event.error))
        loop.published(key, status)

    def reply(self, command: p.Reply) -> None:
        """The reply to the request being fed (`asking`), recorded with it."""
        event = self.asking
        loop = self.loop
        if isinstance(event, p.Answer):
            loop.record(h.ApprovalAnswered(loop.now, event.key, event.approve, command.ok,
                                           command.text))
        else:
            loop.record(h.UserMessageSent(loop.now, event.session_id, event.text, command.ok))

    def drop_worker(self, command: p.DropWorker) -> None:
        worker = command.worker
        loop = self.loop
        loop.record(h.WorkerDeclaredLost(loop.now, worker))
        conn = self.conns.pop(worker, None)
        if conn is not None:
            self.network.server_closes(conn)

    def broken(self, rule: str, text: str) -> None:
        if rule not in _JUDGED_BY_HISTORY:
            raise guard.ProtocolBreach("the executor's commands", f"broke a rule: {text}")

    # -- timers: one heap entry per timer, moved lazily when a restart pushes it later -----------

    def start_timer(self, cmd: p.StartTimer) -> None:
        loop = self.loop
        now = loop.now
        deadline = now + cmd.delay
        name = cmd.timer
        rec = self.timers.get(name)
        kind = cmd.kind
        if rec is not None and kind is HEARTBEAT_TIMEOUT and deadline >= rec[1]:
            rec[0] = deadline
            rec[2] = cmd
            return
        if kind is QUEUE_TIMEOUT or kind is APPROVAL_DEADLINE:
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

    def stop_timer(self, timer: str) -> None:
        self.timers.pop(timer, None)

    def late_timers(self, until: float) -> None:
        """The server's loop stalls until `until` for its timers, not for what it receives: a
        timer due meanwhile fires at `until`, after the messages and answers that came first,
        as an event loop runs what it read before the timers that came due while it stalled."""
        self.late_until = max(self.late_until, until)

    def _timer(self, name: str, rec: list[Any]) -> None:
        if self.timers.get(name) is not rec:
            return
        deadline = rec[0]
        loop = self.loop
        now = loop.now
        when = deadline if deadline > now else self.late_until
        if when > now:
            rec[1] = when
            loop.seq += 1
            heappush(loop.queue, (when, loop.seq, self._timer, name, rec))
            return
        del self.timers[name]
        cmd = rec[2]
        loop.record(h.TimerFired(now, cmd.kind, cmd.subject, _key_of(cmd)))
        self.host.fire(name, now, True)


def _key_of(cmd: p.StartTimer) -> str:
    """The call a timer concerns: its key, or the call's key that starts an attempt's id."""
    return cmd.key or cmd.subject.partition("#")[0]
