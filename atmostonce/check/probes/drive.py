"""A fresh executor driven through the protocol by a probe: the probe's effects for the host
(`atmostonce.check.host.Host`), which carries out the executor's commands and judges the
protocol's rules; the journal and the records published are kept as a harness keeps them."""

from __future__ import annotations

from atmostonce.check.host.host import Host, RuleBroken
from atmostonce.spec.protocol import (
    JSON,
    Cancel,
    Command,
    DropWorker,
    Executor,
    GoAhead,
    NoWork,
    Poll,
    Publish,
    Reply,
    StartTimer,
    TimerKind,
)
from atmostonce.spec.records import Record
from atmostonce.spec.session import ToolCallStatus


class Drive:
    """One fresh executor driven through the protocol on a clock each event advances."""

    def __init__(self, executor: Executor, session: str) -> None:
        self.host = Host(self, executor)
        self.session = session
        self.clock = 0.0
        self.records: dict[str, Record] = {}
        self.requests = 0
        self.journal: list[dict[str, JSON]] = []

    @property
    def executor(self) -> Executor:
        return self.host.executor

    def send(self, event_of: type, *args: object) -> list[Command]:
        self.clock += 1.0
        return self.took(event_of.__name__, self.host.feed(event_of(self.clock, *args)))

    def recover(self, journal: list[dict[str, JSON]], at: float) -> list[Command]:
        """The executor rebuilds from `journal` (D-8)."""
        return self.took("recover", self.host.recover(journal, at))

    def took(self, label: str, commands: list[Command]) -> list[Command]:
        """What the host carried out in one batch (`label` names what made it)."""
        return commands

    def fire(self, kind: TimerKind, key: str) -> bool:
        """Fire the running timer of `kind` about the call `key` (or an attempt of it); False
        when there is none."""
        for timer, start in list(self.host.timers.items()):
            if start.kind is kind and (start.key == key or start.subject == key
                                       or start.subject.startswith(f"{key}#")):
                self._fire(timer)
                return True
        return False

    def _fire(self, timer: str) -> None:
        self.clock += 1.0
        self.took("TimerFired", self.host.fire(timer, self.clock) or [])

    def status(self, key: str) -> tuple[ToolCallStatus | None, object]:
        for view in self.executor.snapshot(self.session).tool_calls:
            if f"{self.session}/{view.turn_id}/{view.tool_call_id}" == key:
                return view.status, view
        return None, None

    def poll(self, worker: str) -> GoAhead | None:
        """The go-ahead a poll of `worker` got, if any."""
        return next((c for c in self.send(Poll, worker) if isinstance(c, GoAhead)), None)

    # -- the effects of the executor's commands --------------------------------------------------

    def persist(self, entry: dict[str, JSON]) -> bool:
        self.journal.append(entry)
        return False

    def start_timer(self, command: StartTimer) -> None:
        """The probe fires timers when it chooses (`fire`)."""

    def stop_timer(self, timer: str) -> None:
        """The host forgets it."""

    def go_ahead(self, command: GoAhead, persisted: bool) -> None:
        """Read off the batch by `poll`."""

    def no_work(self, command: NoWork) -> None:
        """The polling worker stays idle."""

    def cancel(self, command: Cancel) -> None:
        """The probe's workers run nothing by themselves."""

    def drop_worker(self, command: DropWorker) -> None:
        """A dropped worker connects again before it polls."""

    def publish(self, command: Publish) -> None:
        event = command.event
        key = f"{event.session_id}/{event.turn_id}/{event.tool_call_id}"
        self.records[key] = Record(event.status.value)

    def reply(self, command: Reply) -> None:
        """Read off the batch by the probe."""

    def cut(self, rest: list[Command], handed: list[GoAhead]) -> None:
        raise AssertionError("a probe's server never dies inside a batch")

    def broken(self, rule: str, text: str) -> None:
        raise RuleBroken(rule, text)
