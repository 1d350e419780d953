"""A tiny harness for the executor tests: it feeds events, carries out the commands the way a
real harness would (journal, timers, published events), and restarts from the journal."""

from __future__ import annotations

from dataclasses import dataclass, field

from atmostonce.executor import reference
from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import (
    JSON,
    Answer,
    Ask,
    Command,
    Connected,
    Event,
    Executor,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    GoAhead,
    Heartbeat,
    OpenSession,
    Persist,
    Poll,
    Publish,
    Reply,
    SetPolicy,
    Started,
    StartTimer,
    StopTimer,
    TimerFired,
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
    executor: Executor = field(init=False)
    journal: list[dict[str, JSON]] = field(default_factory=list)
    timers: dict[tuple[TimerKind, str], StartTimer] = field(default_factory=dict)
    published: list[ToolCallFinished] = field(default_factory=list)
    log: list[Command] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.executor = self.factory(self.config)

    # -- carrying out commands ------------------------------------------------------------------

    def carry_out(self, commands: list[Command]) -> list[Command]:
        for command in commands:
            self.log.append(command)
            if isinstance(command, Persist):
                self.journal.append(command.entry)
            elif isinstance(command, StartTimer):
                self.timers[(command.kind, command.subject)] = command
            elif isinstance(command, StopTimer):
                for slot, started in list(self.timers.items()):
                    if started.timer == command.timer:
                        del self.timers[slot]
            elif isinstance(command, Publish):
                self.published.append(command.event)
        return commands

    def send(self, event: Event) -> list[Command]:
        return self.carry_out(self.executor.handle(event))

    def restart(self, after: float = 0.0) -> list[Command]:
        """A server restart: a fresh executor recovers from the journal; timers are gone."""
        self.now += after
        self.executor = self.factory(self.config)
        self.timers.clear()
        return self.carry_out(self.executor.recover(list(self.journal), self.now))

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
        started = self.timers.pop((kind, subject))
        self.now += started.delay
        return self.send(TimerFired(self.now, started.timer))

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
