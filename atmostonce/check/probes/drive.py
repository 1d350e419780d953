"""A fresh executor driven through the protocol by a probe, its timers, records and journal
kept as a harness keeps them: what `policies`, `fence` and `restart` share."""

from __future__ import annotations

from atmostonce.spec.protocol import (
    JSON,
    Command,
    Executor,
    GoAhead,
    Persist,
    Poll,
    Publish,
    StartTimer,
    StopTimer,
    TimerFired,
    TimerKind,
)
from atmostonce.spec.records import Record
from atmostonce.spec.session import ToolCallStatus


class Drive:
    """One fresh executor driven through the protocol, its timers kept as a harness would."""

    def __init__(self, executor: Executor, session: str) -> None:
        self.executor = executor
        self.session = session
        self.clock = 0.0
        self.timers: dict[str, StartTimer] = {}
        self.records: dict[str, Record] = {}
        self.requests = 0
        self.journal: list[dict[str, JSON]] = []

    def send(self, event_of: type, *args: object) -> list[Command]:
        self.clock += 1.0
        return self.take(event_of.__name__, self.executor.handle(event_of(self.clock, *args)))

    def take(self, label: str, commands: list[Command]) -> list[Command]:
        """Carry out one batch of commands as a harness would (`label` names what made it)."""
        for command in commands:
            if isinstance(command, Persist):
                self.journal.append(command.entry)
            elif isinstance(command, StartTimer):
                self.timers[command.timer] = command
            elif isinstance(command, StopTimer):
                self.timers.pop(command.timer, None)
            elif isinstance(command, Publish):
                event = command.event
                key = f"{event.session_id}/{event.turn_id}/{event.tool_call_id}"
                self.records[key] = Record(event.status.value)
        return commands

    def fire(self, kind: TimerKind, key: str) -> bool:
        for timer, start in list(self.timers.items()):
            if start.kind is kind and (start.key == key or start.subject == key
                                       or start.subject.startswith(f"{key}#")):
                del self.timers[timer]
                self.send(TimerFired, timer)
                return True
        return False

    def status(self, key: str) -> tuple[ToolCallStatus | None, object]:
        for view in self.executor.snapshot(self.session).tool_calls:
            if f"{self.session}/{view.turn_id}/{view.tool_call_id}" == key:
                return view.status, view
        return None, None

    def go_ahead(self, worker: str) -> GoAhead | None:
        """The go-ahead a poll of `worker` got, if any."""
        return next((c for c in self.send(Poll, worker) if isinstance(c, GoAhead)), None)
