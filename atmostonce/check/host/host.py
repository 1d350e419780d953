"""The one place that carries out an executor's commands in order and judges the protocol's
own rules (`atmostonce.check.host.rules`), for every environment: the environment supplies its
effects (`atmostonce.check.host.effects.Effects`) and the clock; the host keeps which timers
run, so that a timer fires once per start and only while it runs, which attempt went to which
worker, and which workers the executor dropped, which get no command until they connect
again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from atmostonce.check.host import rules
from atmostonce.check.host.effects import Effects
from atmostonce.spec.protocol import (
    JSON,
    Answer,
    Cancel,
    Command,
    Connected,
    DropWorker,
    Event,
    Executor,
    GoAhead,
    NoWork,
    Persist,
    Publish,
    Reply,
    StartTimer,
    StopTimer,
    TimerFired,
    TimerKind,
    UserMessage,
)

_RUN_TIMEOUT = TimerKind.RUN_TIMEOUT


class RuleBroken(AssertionError):
    """The executor broke the protocol's rule `rule`: what an environment that reports a
    breach by raising raises."""

    def __init__(self, rule: str, text: str) -> None:
        super().__init__(text)
        self.rule = rule


class Host:
    """An executor and the environment around it: events in, the executor's commands carried
    out through the environment's effects, in order, each batch judged by the protocol's
    rules."""

    __slots__ = ("_cancel", "_drop", "_go", "_no_work", "_persist", "_publish", "_reply",
                 "_start_timer", "_stop_timer", "dropped", "effects", "executor", "handed",
                 "timers")

    def __init__(self, effects: Effects, executor: Executor | None = None) -> None:
        """`executor`: the one to host from now; without it, `start` names it later (an
        environment that builds it only when its run starts)."""
        self.effects = effects
        self.executor: Executor
        if executor is not None:
            self.executor = executor
        self.timers: dict[str, StartTimer] = {}
        """The timers that run, by name, with the command that started them last."""
        self.handed: dict[str, str] = {}
        """The worker each attempt's go-ahead went to; kept across restarts, as a judge's
        memory of what it saw."""
        self.dropped: set[str] = set()
        """The workers the executor dropped that have not connected since."""
        self._persist = effects.persist
        self._start_timer = effects.start_timer
        self._stop_timer = effects.stop_timer
        self._go = effects.go_ahead
        self._no_work = effects.no_work
        self._cancel = effects.cancel
        self._drop = effects.drop_worker
        self._publish = effects.publish
        self._reply = effects.reply

    # -- events in -------------------------------------------------------------------------------

    def feed(self, event: Event, cuttable: bool = False) -> list[Command]:
        """Hand `event` to the executor and carry out its commands; `cuttable`: the server may
        die inside this batch (the environment's `persist` decides)."""
        kind = type(event)
        if kind is Connected:
            self.dropped.discard(event.worker)  # type: ignore[attr-defined]
        commands = self.executor.handle(event)
        request = None
        if kind is Answer or kind is UserMessage:
            request = event.request  # type: ignore[attr-defined]
            self._one_reply(request, commands)
        if commands:
            self._carry_out(commands, cuttable, request)
        return commands

    def request(self, event: Answer | UserMessage) -> Reply | None:
        """Hand a request to the executor and carry out its reply before the batch's other
        commands, for an environment whose requester hears the answer at once (nothing
        durable to wait for); the reply, or None after a breach of the one-reply rule."""
        commands = self.executor.handle(event)
        reply = self._one_reply(event.request, commands)
        if reply is not None:
            self._reply(reply)
            commands = [c for c in commands if c is not reply]
        if commands:
            self._carry_out(commands, False, None)
        return reply

    def _one_reply(self, request: str, commands: Sequence[Command]) -> Reply | None:
        """The batch's one reply to `request`; None, after telling the environment, when it
        holds none or more."""
        replies = [c for c in commands if type(c) is Reply]
        problem = rules.replies_problem(request, replies)
        if problem is not None:
            self.effects.broken(rules.ONE_REPLY, problem)
            return None
        return replies[0]

    def fire(self, timer: str, at: float, cuttable: bool = False) -> list[Command] | None:
        """The environment's timer `timer` is due: the executor gets `TimerFired` if the timer
        runs (None otherwise: a timer fires once per start and only while it runs). The answer
        to a run timeout must cancel the attempt at its worker."""
        start = self.timers.pop(timer, None)
        if start is None:
            return None
        commands = self.feed(TimerFired(at, timer), cuttable)
        if start.kind is _RUN_TIMEOUT:
            attempt = start.subject
            problem = rules.cancel_missing(attempt, self.handed.get(attempt), commands)
            if problem is not None:
                self.effects.broken(rules.CANCEL_ON_TIMEOUT, problem)
        return commands

    def start(self, executor: Executor) -> None:
        """Host `executor` from now: the environment's run starts."""
        self.executor = executor

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        """Hand the executor the journal of an earlier incarnation (D-8) and carry out what it
        answers."""
        commands = self.executor.recover(journal, at)
        self.carry_out(commands)
        return commands

    def restart(self, executor: Executor, journal: Sequence[dict[str, JSON]],
                at: float) -> list[Command]:
        """The server restarts (D-8): `executor` is a fresh one; timers and connections are
        lost with the old one, and it recovers from `journal`."""
        self.executor = executor
        self.timers.clear()
        self.dropped.clear()
        return self.recover(journal, at)

    # -- commands out ----------------------------------------------------------------------------

    def carry_out(self, commands: list[Command], cuttable: bool = False) -> None:
        """Carry out the commands in order (the protocol's contract), judging each batch."""
        if type(commands) is not list:
            commands = list(commands)
        self._carry_out(commands, cuttable, None)

    def _carry_out(self, commands: list[Command], cuttable: bool, request: str | None) -> None:
        """`request`: the request this batch answers, the only one it may reply to."""
        last = len(commands) - 1
        timers = self.timers
        each: list[Any] = commands  # dispatched on the exact type, so each field is there
        for i, command in enumerate(each):
            kind = type(command)
            if kind is StartTimer:
                timers[command.timer] = command
                self._start_timer(command)
            elif kind is Persist:
                if self._persist(command.entry) and cuttable and i < last:
                    self._cut(commands, i + 1)
                    return
            elif kind is StopTimer:
                timers.pop(command.timer, None)
                self._stop_timer(command.timer)
            elif kind is GoAhead:
                self._go_ahead(command, commands, i)
            elif kind is NoWork:
                if command.worker not in self.dropped:
                    self._no_work(command)
            elif kind is Publish:
                self._publish(command)
            elif kind is Cancel:
                if command.worker not in self.dropped:
                    self._cancel(command)
            elif kind is DropWorker:
                self.dropped.add(command.worker)
                self._drop(command)
            elif kind is Reply:
                if command.request == request:
                    self._reply(command)
                else:
                    self.effects.broken(rules.ONE_REPLY, rules.stray_reply(command))
            else:
                raise TypeError(f"{command!r:.200} is not a protocol command")

    def _go_ahead(self, go: GoAhead, commands: list[Command], i: int) -> None:
        persisted = rules.persisted_before(commands, i, go)
        if not persisted:
            self.effects.broken(rules.GO_AHEAD_PERSISTED, rules.go_ahead_unpersisted(go))
        self.handed[go.attempt] = go.worker
        if go.worker not in self.dropped:
            self._go(go, persisted)

    def _cut(self, commands: list[Command], first: int) -> None:
        rest = commands[first:]
        handed = [c for c in rest if type(c) is GoAhead
                  and rules.persisted_before(commands, first, c)]
        self.effects.cut(rest, handed)
