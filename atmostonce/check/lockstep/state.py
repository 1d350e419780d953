"""What a lockstep (`atmostonce.check.lockstep.conformance.Lockstep`) holds, and the effects it
supplies to the host (`atmostonce.check.host.Host`) that carries out the executor's commands:
the model's concrete state, the executor (guarded, `atmostonce.check.executors.guard`) with the
world around it (its journal, workers and their runs, the go-aheads sent, the records
published, the replies, the services' ledgers). Journal entries are kept, go-aheads passed to
their workers (the host judges D-5 first), records and replies collected, retry backoffs fired
at once; any breach of the host's rules is a disagreement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atmostonce.check.executors import guard
from atmostonce.check.host.host import Host
from atmostonce.model.choices import ModelChoices
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import Label, State
from atmostonce.model.system import System
from atmostonce.spec import protocol as p

SESSION = "s"


class Disagreement(AssertionError):
    """The executor did something the model does not allow, or shows a different state."""


@dataclass
class RunAtWorker:
    """A run of an attempt that a worker of the lockstep's world has going."""

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
    return p.ExecutorConfig(max_attempts=config.max_attempts, fence=config.fence,
                            cancel_records_failed=config.cancel_records_failed)


class LockstepState:
    """One executor and one concrete model state, and the protocol between the harness and the
    executor; the base of the lockstep."""

    def __init__(self, config: ModelConfig, factory: p.ExecutorFactory,
                 choices: ModelChoices | None = None) -> None:
        self.config = config
        self.system = System(config, choices)
        """The model; `choices` replace its decisions, as a model mutant does."""
        self.state: State = self.system.initial()
        self.factory = factory
        self.log: list[str] = []
        self.executor_config = executor_config(config)
        self.host = Host(self, guard.build(factory, self.executor_config, True))
        self.clock = 0.0
        self.journal: list[dict[str, p.JSON]] = []
        self.timer_clock: dict[str, float] = {}
        """When each timer was last started, on the harness's clock."""
        self.backoffs: list[str] = []
        """The retry backoffs the batch being carried out started."""
        self.asked_clock: dict[str, float] = {}
        """When each call was asked, by key."""
        self.workers = [Worker(f"w{i}") for i in range(config.workers)]
        self.keys: list[str] = []
        self.tools: list[str] = []
        self.sent: dict[str, tuple[str, str]] = {}  # worker -> (attempt, key) of a go-ahead
        self.runs: dict[tuple[int, str], RunAtWorker] = {}  # (call, worker) -> run
        self.hand_outs: dict[str, int] = {}
        self.published: dict[str, list[str]] = {}
        self.published_errors: dict[str, list[str]] = {}
        self.outputs: dict[str, set[str]] = {}
        """What each call's runs reported, by key: a succeeded call's tool result is one."""
        self.failures: dict[str, set[str]] = {}
        """The failures each call's runs reported, by key: one reaches its error (D-3)."""
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

    @property
    def executor(self) -> p.Executor:
        return self.host.executor

    @property
    def timers(self) -> dict[str, p.StartTimer]:
        """The executor's timers that run, by name."""
        return self.host.timers

    def _send(self, event: p.Event) -> list[p.Command]:
        commands = self.host.feed(event)
        self._took(commands)
        return commands

    def _took(self, commands: list[p.Command]) -> None:
        """After a batch: the retry backoffs it started fire at once (backoff is timing the model
        abstracts away)."""
        backoffs, self.backoffs = self.backoffs, []
        for timer in backoffs:
            if timer in self.host.timers:
                self._fire(timer)

    def _fire(self, timer: str) -> None:
        """The running timer `timer` fires; the host judges the answer to a run timeout."""
        self._took(self.host.fire(timer, self.clock) or [])

    def _restart(self) -> None:
        """The server restarts on its journal with a fresh executor (D-8)."""
        executor = guard.build(self.factory, self.executor_config, True)
        self._took(self.host.restart(executor, list(self.journal), self.clock))

    # -- the effects of the executor's commands --------------------------------------------------

    def persist(self, entry: dict[str, p.JSON]) -> bool:
        self.journal.append(entry)
        return False

    def start_timer(self, command: p.StartTimer) -> None:
        self.timer_clock[command.timer] = self.clock
        if command.kind is p.TimerKind.RETRY_BACKOFF:
            self.backoffs.append(command.timer)

    def stop_timer(self, timer: str) -> None:
        """The host forgets it; the lockstep keeps when it was started."""

    def go_ahead(self, command: p.GoAhead, persisted: bool) -> None:
        self.sent[command.worker] = (command.attempt, command.key)

    def no_work(self, command: p.NoWork) -> None:
        """The polling worker stays idle."""

    def cancel(self, command: p.Cancel) -> None:
        """Cooperative: the model's run goes on (TC-AMO-3)."""

    def drop_worker(self, command: p.DropWorker) -> None:
        """The model's worker is lost already when the executor drops it."""

    def publish(self, command: p.Publish) -> None:
        event = command.event
        key = f"{event.session_id}/{event.turn_id}/{event.tool_call_id}"
        self.published.setdefault(key, []).append(event.status.value)
        self.published_errors.setdefault(key, []).append(event.error)

    def reply(self, command: p.Reply) -> None:
        self.replies[command.request] = command

    def cut(self, rest: list[p.Command], handed: list[p.GoAhead]) -> None:
        raise AssertionError("the lockstep's server never dies inside a batch")

    def broken(self, rule: str, text: str) -> None:
        raise Disagreement(text)

    def _timer(self, kind: p.TimerKind, key: str = "", subject: str = "") -> str | None:
        for timer, start in self.host.timers.items():
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
