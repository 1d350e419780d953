"""A tiny harness for the executor tests: it feeds events through the host
(`atmostonce.check.host.Host`), which carries out the commands and judges the protocol's rules,
keeps what a real harness would (journal, published events, every command), and restarts from
the journal."""

from __future__ import annotations

from dataclasses import dataclass, field

from atmostonce.check.host.host import Host, RuleBroken
from atmostonce.executor import reference
from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import (
    JSON,
    Answer,
    Ask,
    Cancel,
    Command,
    Connected,
    DropWorker,
    Event,
    Executor,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    GoAhead,
    Heartbeat,
    NoWork,
    OpenSession,
    Poll,
    Publish,
    Reply,
    SetPolicy,
    Started,
    StartTimer,
    TimerKind,
    UserMessage,
)
from atmostonce.spec.session import AgentSnapshot, ToolCallFinished, ToolCallView

SESSION = "s1"
TURN = "t1"


@dataclass
class Driver:
    """Drives one executor through the protocol and keeps what a harness would keep."""

    config: ExecutorConfig = field(default_factory=ExecutorConfig)
    factory: ExecutorFactory = reference
    now: float = 0.0
    host: Host = field(init=False)
    journal: list[dict[str, JSON]] = field(default_factory=list)
    published: list[ToolCallFinished] = field(default_factory=list)
    log: list[Command] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.host = Host(self, self.factory(self.config))

    @property
    def executor(self) -> Executor:
        return self.host.executor

    @property
    def timers(self) -> dict[tuple[TimerKind, str], StartTimer]:
        """The timers that run, by kind and subject."""
        return {(t.kind, t.subject): t for t in self.host.timers.values()}

    # -- carrying out commands ------------------------------------------------------------------

    def send(self, event: Event) -> list[Command]:
        return self._took(self.host.feed(event))

    def _took(self, commands: list[Command]) -> list[Command]:
        self.log.extend(commands)
        return commands

    def restart(self, after: float = 0.0) -> list[Command]:
        """A server restart: a fresh executor recovers from the journal; timers are gone."""
        self.now += after
        return self._took(self.host.restart(self.factory(self.config), list(self.journal),
                                            self.now))

    def persist(self, entry: dict[str, JSON]) -> bool:
        self.journal.append(entry)
        return False

    def publish(self, command: Publish) -> None:
        self.published.append(command.event)

    def broken(self, rule: str, text: str) -> None:
        raise RuleBroken(rule, text)

    def start_timer(self, command: StartTimer) -> None:
        """The tests fire timers when they choose (`fire`)."""

    def stop_timer(self, timer: str) -> None:
        """The host forgets it."""

    def go_ahead(self, command: GoAhead, persisted: bool) -> None:
        """Read off the batch by `poll`."""

    def no_work(self, command: NoWork) -> None:
        """Kept in the log."""

    def cancel(self, command: Cancel) -> None:
        """Kept in the log."""

    def drop_worker(self, command: DropWorker) -> None:
        """Kept in the log."""

    def reply(self, command: Reply) -> None:
        """Read off the batch by `answer` and `user_message`."""

    def cut(self, rest: list[Command], handed: list[GoAhead]) -> None:
        raise AssertionError("the tests' server never dies inside a batch")

    # -- events ---------------------------------------------------------------------------------

    def policy(self, tool: str, effect: EffectClass | None = None,
               requires_approval: bool | None = None,
               hints: ToolHints | None = None) -> list[Command]:
        policy = ToolPolicy(effect, requires_approval) if effect is not None else None
        return self.send(SetPolicy(self.now, tool, policy, hints))

    def open(self, session: str = SESSION, default: EffectClass | None = None) -> list[Command]:
        return self.send(OpenSession(self.now, session, default))

    def ask(self, tool: str, call: str = "c1", turn: str = TURN, session: str = SESSION,
            arguments: str = "{}") -> str:
        self.send(Ask(self.now, session, turn, call, tool, arguments))
        return build_key(session, turn, call)

    def answer(self, key: str, approve: bool, request: str = "r1") -> Reply:
        replies = [c for c in self.send(Answer(self.now, request, key, approve))
                   if isinstance(c, Reply)]
        assert len(replies) == 1
        return replies[0]

    def user_message(self, text: str, session: str = SESSION, request: str = "u1") -> Reply:
        replies = [c for c in self.send(UserMessage(self.now, request, session, text))
                   if isinstance(c, Reply)]
        assert len(replies) == 1
        return replies[0]

    def connect(self, worker: str, running: tuple[str, ...] = ()) -> list[Command]:
        return self.send(Connected(self.now, worker, running))

    def poll(self, worker: str) -> GoAhead | None:
        goes = [c for c in self.send(Poll(self.now, worker)) if isinstance(c, GoAhead)]
        assert len(goes) <= 1
        return goes[0] if goes else None

    def start(self, worker: str, attempt: str) -> list[Command]:
        return self.send(Started(self.now, worker, attempt))

    def beat(self, worker: str, attempt: str) -> list[Command]:
        return self.send(Heartbeat(self.now, worker, attempt))

    def finish(self, worker: str, attempt: str, ok: bool = True,
               output: str = "done") -> list[Command]:
        return self.send(Finished(self.now, worker, attempt, ok, output))

    def run(self, worker: str, ok: bool = True, output: str = "done") -> GoAhead:
        """A worker polls, starts the attempt it gets and finishes it."""
        go = self.poll(worker)
        assert go is not None
        self.start(worker, go.attempt)
        self.finish(worker, go.attempt, ok, output)
        return go

    def fire(self, kind: TimerKind, subject: str) -> list[Command]:
        """The timer of `kind` about `subject` fires; it must be pending."""
        started = self.timers[(kind, subject)]
        self.now += started.delay
        return self.fire_timer(started.timer)

    def fire_timer(self, timer: str) -> list[Command]:
        """The running timer `timer` fires now."""
        commands = self.host.fire(timer, self.now)
        assert commands is not None, f"timer {timer} does not run"
        return self._took(commands)

    def pending(self, kind: TimerKind, subject: str) -> bool:
        return (kind, subject) in self.timers

    # -- reading --------------------------------------------------------------------------------

    def snapshot(self, session: str = SESSION) -> AgentSnapshot:
        return self.executor.snapshot(session)

    def view(self, key: str, session: str = SESSION) -> ToolCallView:
        found = [v for v in self.snapshot(session).tool_calls if v.idempotency_key == key]
        assert len(found) == 1
        return found[0]

    def entries(self, kind: str) -> list[dict[str, JSON]]:
        return [e for e in self.journal if e["type"] == kind]

    def commands(self, kind: type[Command]) -> list[Command]:
        return [c for c in self.log if isinstance(c, kind)]
