"""What a lockstep (`atmostonce.check.lockstep.conformance.Lockstep`) holds, and how it talks to the
executor under test: the model's concrete state, the executor (guarded,
`atmostonce.check.executors.guard`) with the world around it (its journal, timers, workers and their
runs, the go-aheads sent, the records published, the replies, the services' ledgers), events sent to
it, and its commands carried out: journal entries kept, timers started and stopped, go-aheads passed
to their workers once persisted (D-5), records and replies collected, retry backoffs fired at once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from atmostonce.check.executors import guard
from atmostonce.model.choices import ModelChoices
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import Label, State
from atmostonce.model.system import System
from atmostonce.spec import protocol as p

SESSION = "s"


class Disagreement(AssertionError):
    """The executor did something the model does not allow, or shows a different state."""


@dataclass
class Run:
    worker: str
    attempt: str
    key: str
    started_sent: bool = False


@dataclass
class Worker:
    name: str
    connection: str = "up"  # up, cut, restart-cut, crashed, lost
    held: list[p.Event] = field(default_factory=list)


def executor_config(config: ModelConfig) -> p.ExecutorConfig:
    return p.ExecutorConfig(max_attempts=config.max_attempts, fence=config.fence)


class LockstepState:
    """One executor and one concrete model state, and the protocol between the harness and the
    executor; the base of the lockstep."""

    def __init__(self, config: ModelConfig, factory: p.ExecutorFactory,
                 protocol: ModelChoices | None = None) -> None:
        self.config = config
        self.system = System(config, protocol)
        """The model; `protocol` replaces its decisions, as a model mutant does."""
        self.state: State = self.system.initial()
        self.factory = factory
        self.log: list[str] = []
        self.executor_config = executor_config(config)
        self.executor: p.Executor = guard.build(factory, self.executor_config, True)
        self.clock = 0.0
        self.journal: list[dict[str, p.JSON]] = []
        self.timers: dict[str, p.StartTimer] = {}
        self.timer_clock: dict[str, float] = {}
        """When each running timer was started, on the harness's clock."""
        self.asked_clock: dict[str, float] = {}
        """When each call was asked, by key."""
        self.workers = [Worker(f"w{i}") for i in range(config.workers)]
        self.keys: list[str] = []
        self.tools: list[str] = []
        self.sent: dict[str, tuple[str, str]] = {}  # worker -> (attempt, key) of a go-ahead
        self.attempt_key: dict[str, str] = {}
        self.attempt_worker: dict[str, str] = {}
        """The worker each attempt's go-ahead went to."""
        self.runs: dict[tuple[int, str], Run] = {}  # (call, worker) -> run
        self.hand_outs: dict[str, int] = {}
        self.published: dict[str, list[str]] = {}
        self.published_errors: dict[str, list[str]] = {}
        self.outputs: dict[str, set[str]] = {}
        """What each call's runs reported, by key: a succeeded call's tool result is one."""
        self.replies: dict[str, p.Reply] = {}
        self.ledger_keys: set[str] = set()
        self.effects: dict[str, int] = {}
        self.business: set[str] = set()
        self.requests = 0
        self.diverged = False
        """The executor chose another queued attempt than the schedule named (allowed)."""
        self._setup()

    # -- the model -----------------------------------------------------------------------------

    def enabled(self) -> list[Label]:
        return [s.label for s in self.system.successors(self.state)]

    def _advance(self, label: Label) -> None:
        for succ in self.system.successors(self.state):
            if succ.label == label:
                self.state = succ.state
                return
        raise Disagreement(f"the model does not allow {label} here")

    # -- driving the executor ------------------------------------------------------------------

    def _setup(self) -> None:
        for tool in self.config.tools:
            self._send(p.SetPolicy(self.clock, tool.name, tool.initial_policy, tool.hints))
        self._send(p.OpenSession(self.clock, SESSION, self.config.session_default,
                                 self.config.hints_may_lower))
        for w in self.workers:
            self._send(p.Connected(self.clock, w.name))

    def _send(self, event: p.Event) -> list[p.Command]:
        commands = self.executor.handle(event)
        self._carry_out(commands)
        return commands

    def _carry_out(self, commands: list[p.Command]) -> None:
        backoffs: list[str] = []
        for i, command in enumerate(commands):
            if isinstance(command, p.Persist):
                self.journal.append(command.entry)
            elif isinstance(command, p.GoAhead):
                persisted = any(isinstance(c, p.Persist) and command.attempt in json.dumps(c.entry)
                                for c in commands[:i])
                if not persisted:
                    raise Disagreement(
                        f"go-ahead for {command.attempt} sent before its hand-out was persisted "
                        "(D-5)")
                self.sent[command.worker] = (command.attempt, command.key)
                self.attempt_key[command.attempt] = command.key
                self.attempt_worker[command.attempt] = command.worker
            elif isinstance(command, p.StartTimer):
                self.timers[command.timer] = command
                self.timer_clock[command.timer] = self.clock
                if command.kind is p.TimerKind.RETRY_BACKOFF:
                    backoffs.append(command.timer)
            elif isinstance(command, p.StopTimer):
                self.timers.pop(command.timer, None)
            elif isinstance(command, p.Publish):
                key = f"{command.event.session_id}/{command.event.turn_id}/" \
                      f"{command.event.tool_call_id}"
                self.published.setdefault(key, []).append(command.event.status.value)
                self.published_errors.setdefault(key, []).append(command.event.error)
            elif isinstance(command, p.Reply):
                self.replies[command.request] = command
        for timer in backoffs:  # backoff is timing the model abstracts away
            if timer in self.timers:
                self._fire(timer)

    def _fire(self, timer: str) -> None:
        self.timers.pop(timer, None)
        self._send(p.TimerFired(self.clock, timer))

    def _timer(self, kind: p.TimerKind, key: str = "", subject: str = "") -> str | None:
        for timer, start in self.timers.items():
            if start.kind is not kind:
                continue
            if subject and start.subject == subject:
                return timer
            if key and (start.key == key or start.subject == key
                        or start.subject.startswith(f"{key}#")):
                return timer
        return None

    def _fire_kind(self, kind: p.TimerKind, key: str = "", subject: str = "") -> None:
        timer = self._timer(kind, key, subject)
        if timer is None:
            raise Disagreement(f"the executor has no {kind.value} timer for {key or subject}, "
                               "but the model lets it fire")
        self._fire(timer)

    def _from_worker(self, w: Worker, event: p.Event) -> None:
        """A worker's message: delivered now, held while cut off, lost once the worker is."""
        if w.connection == "up":
            self._send(event)
        elif w.connection in ("cut", "restart-cut"):
            w.held.append(event)
