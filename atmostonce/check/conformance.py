"""Conformance: an executor under test and the model, driven in lockstep.

The harness plays the environment of the model (the agent's model, people, workers, their
connections, the services tools write to, timers, restarts) against the executor through the
protocol. Each model step is translated into protocol events; the one step the executor decides
for itself, which queued attempt a polling worker gets, is read back from its commands and must
be a step the model allows. After every step the executor's observable state (each call's
status and error, how often it was handed out, records published, reports sent) and the
services' ledgers must agree with the model's.

`replay_schedules` replays, within a depth, the shortest schedule of every state the explorer
reaches, or that schedule followed by each transition out of the state; `Lockstep` is also what
the Hypothesis state machine in the tests drives.

The executor is driven through `atmostonce.check.guard`, with its journal entries checked to be
JSON: an executor that raises, or answers outside the protocol's types, is a `ProtocolBreach`,
reported like a disagreement with the schedule that led to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from atmostonce.check import guard
from atmostonce.model import layout as m
from atmostonce.model.config import ModelConfig
from atmostonce.model.explorer import Explorer
from atmostonce.model.layout import Label, State
from atmostonce.model.system import System
from atmostonce.spec import protocol as p
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.reconcile import pending_reports, report_text
from atmostonce.spec.records import RejectReason, failure_text, reject_text
from atmostonce.spec.session import ToolCallStatus

SESSION = "s"


class Disagreement(AssertionError):
    """The executor did something the model does not allow, or shows a different state."""


@dataclass
class _Run:
    worker: str
    attempt: str
    key: str
    started_sent: bool = False


@dataclass
class _Worker:
    name: str
    connection: str = "up"  # up, cut, restart-cut, crashed, lost
    held: list[p.Event] = field(default_factory=list)


def executor_config(config: ModelConfig) -> p.ExecutorConfig:
    return p.ExecutorConfig(max_attempts=config.max_attempts, fence=config.fence)


class Lockstep:
    """One executor and one concrete model state, stepped together."""

    def __init__(self, config: ModelConfig, factory: p.ExecutorFactory) -> None:
        self.config = config
        self.system = System(config)
        self.state: State = self.system.initial()
        self.factory = factory
        self.log: list[str] = []
        self.executor: p.Executor = guard.build(factory, executor_config(config), True)
        self.clock = 0.0
        self.journal: list[dict[str, p.JSON]] = []
        self.timers: dict[str, p.StartTimer] = {}
        self.workers = [_Worker(f"w{i}") for i in range(config.workers)]
        self.keys: list[str] = []
        self.tools: list[str] = []
        self.sent: dict[str, tuple[str, str]] = {}  # worker -> (attempt, key) of a go-ahead
        self.attempt_key: dict[str, str] = {}
        self.runs: dict[tuple[int, str], _Run] = {}  # (call, worker) -> run
        self.hand_outs: dict[str, int] = {}
        self.published: dict[str, list[str]] = {}
        self.replies: dict[str, p.Reply] = {}
        self.ledger_keys: set[str] = set()
        self.effects: dict[str, int] = {}
        self.business: set[str] = set()
        self.requests = 0
        self.diverged = False
        """The executor chose another queued attempt than the schedule named (allowed)."""
        self._setup()

    # -- driving ------------------------------------------------------------------------------

    def _setup(self) -> None:
        for tool in self.config.tools:
            self._send(p.SetPolicy(self.clock, tool.name, tool.policy))
        self._send(p.OpenSession(self.clock, SESSION))
        for w in self.workers:
            self._send(p.Connected(self.clock, w.name))

    def enabled(self) -> list[Label]:
        return [s.label for s in self.system.successors(self.state)]

    def step(self, label: Label) -> None:
        """Take one model step on both sides and compare."""
        self.clock += 1.0
        kind = label[0]
        self.log.append(self._describe(label))
        getattr(self, f"_do_{kind}")(label)
        if kind != "hand":
            self._advance(label)
        self.compare()
        if kind in ("approve", "reject", "deadline"):
            self._probe_answers(label[1])
        elif kind in ("ask", "reask"):
            self._probe_answers(len(self.keys) - 1)
        self._probe_polls()

    def _probe_polls(self) -> None:
        """When the model hands out nothing, every idle worker that is up gets no work: this
        is where a fence, an approval or a record must hold an attempt back."""
        if any(label[0] == "hand" for label in self.enabled()):
            return
        busy = {run.worker for run in self.runs.values()} | set(self.sent)
        for w, worker in enumerate(self.workers):
            if worker.connection != "up" or worker.name in busy:
                continue
            if self.state[m.NG + w] != m.W_UP:
                continue
            self._send(p.Poll(self.clock, worker.name))
            handed = self.sent.pop(worker.name, None)
            if handed is not None:
                raise Disagreement(f"worker {worker.name} polled and got {handed[0]}, but the "
                                   "model hands out nothing here")

    def _probe_answers(self, i: int) -> None:
        """Answers that come too late, twice, or for a call that needs none change nothing and
        are refused (D-7); only a call still waiting takes an answer."""
        if self.system.calls_of(self.state)[i][m.CS] == m.C_AWAIT:
            return
        for approve in (True, False):
            self.requests += 1
            request = f"r{self.requests}"
            self._send(p.Answer(self.clock, request, self.keys[i], approve))
            reply = self.replies.get(request)
            if reply is None or reply.ok:
                verb = "approval" if approve else "rejection"
                raise Disagreement(f"the executor accepted a late {verb} of call {i} "
                                   f"({self.keys[i]}): {reply}")
        self.compare()

    def _advance(self, label: Label) -> None:
        for succ in self.system.successors(self.state):
            if succ.label == label:
                self.state = succ.state
                return
        raise Disagreement(f"the model does not allow {label} here")

    def _describe(self, label: Label) -> str:
        kind, a, b = label
        return f"{kind}({a}, {b})" if b >= 0 else f"{kind}({a})" if a >= 0 else kind

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
            elif isinstance(command, p.StartTimer):
                self.timers[command.timer] = command
                if command.kind is p.TimerKind.RETRY_BACKOFF:
                    backoffs.append(command.timer)
            elif isinstance(command, p.StopTimer):
                self.timers.pop(command.timer, None)
            elif isinstance(command, p.Publish):
                key = f"{command.event.session_id}/{command.event.turn_id}/" \
                      f"{command.event.tool_call_id}"
                self.published.setdefault(key, []).append(command.event.status.value)
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

    def _from_worker(self, w: _Worker, event: p.Event) -> None:
        """A worker's message: delivered now, held while cut off, lost once the worker is."""
        if w.connection == "up":
            self._send(event)
        elif w.connection in ("cut", "restart-cut"):
            w.held.append(event)

    # -- the environment's actions -------------------------------------------------------------

    def _new_call(self, tool: int) -> None:
        i = len(self.keys)
        key = f"{SESSION}/turn-{i}/call-{i}"
        self.keys.append(key)
        self.tools.append(self.config.tools[tool].name)
        self._send(p.Ask(self.clock, SESSION, f"turn-{i}", f"call-{i}",
                         self.config.tools[tool].name))

    def _do_ask(self, label: Label) -> None:
        self._new_call(label[1])

    def _do_reask(self, label: Label) -> None:
        self._new_call(self.system.calls_of(self.state)[label[1]][m.T])

    def _do_change_policy(self, label: Label) -> None:
        tool = self.config.tools[label[1]]
        changed = not (self.state[m.TV] >> label[1] & 1)
        self._send(p.SetPolicy(self.clock, tool.name,
                               tool.changed_policy() if changed else tool.policy))

    def _answer(self, label: Label, approve: bool) -> None:
        self.requests += 1
        request = f"r{self.requests}"
        self._send(p.Answer(self.clock, request, self.keys[label[1]], approve))
        reply = self.replies.get(request)
        if reply is None or not reply.ok:
            raise Disagreement(f"the executor refused an answer the model accepts: {reply}")

    def _do_approve(self, label: Label) -> None:
        self._answer(label, True)

    def _do_reject(self, label: Label) -> None:
        self._answer(label, False)

    def _do_deadline(self, label: Label) -> None:
        self._fire_kind(p.TimerKind.APPROVAL_DEADLINE, key=self.keys[label[1]])

    def _do_expire(self, label: Label) -> None:
        self._fire_kind(p.TimerKind.QUEUE_TIMEOUT, key=self.keys[label[1]])

    def _do_hand(self, label: Label) -> None:
        worker = self.workers[label[2]]
        self.sent.pop(worker.name, None)
        self._send(p.Poll(self.clock, worker.name))
        handed = self.sent.get(worker.name)
        if handed is None:
            raise Disagreement(f"worker {worker.name} polled and got no work, but the model "
                               f"hands it call {label[1]}'s attempt")
        key = handed[1]
        if key not in self.keys:
            raise Disagreement(f"the go-ahead names an unknown key {key!r}")
        chosen: Label = ("hand", self.keys.index(key), label[2])
        self.diverged = self.diverged or chosen != label
        self.hand_outs[key] = self.hand_outs.get(key, 0) + 1
        if chosen not in self.enabled():
            raise Disagreement(f"the executor handed call {chosen[1]}'s attempt to "
                               f"{worker.name}, which the model does not allow")
        self._advance(chosen)

    def _do_go(self, label: Label) -> None:
        i, w = label[1], label[2]
        worker = self.workers[w]
        attempt, key = self.sent.pop(worker.name)
        self.runs[(i, worker.name)] = _Run(worker.name, attempt, key)

    def _do_heartbeat(self, label: Label) -> None:
        run = self.runs[(label[1], self.workers[label[2]].name)]
        run.started_sent = True
        self._from_worker(self.workers[label[2]], p.Started(self.clock, run.worker, run.attempt))

    def _do_time_out(self, label: Label) -> None:
        self._fire_kind(p.TimerKind.RUN_TIMEOUT, key=self.keys[label[1]])

    def _do_apply(self, label: Label) -> None:
        run = self.runs[(label[1], self.workers[label[2]].name)]
        tool = self.config.tools[self.system.calls_of(self.state)[label[1]][m.T]]
        name = tool.name
        if tool.effect is EffectClass.NON_IDEMPOTENT_WRITE and self.config.ledger == "plain":
            applies = True
        elif tool.effect is EffectClass.NON_IDEMPOTENT_WRITE and self.config.ledger == "business":
            applies = name not in self.business
            self.business.add(name)
        else:
            applies = run.key not in self.ledger_keys
            self.ledger_keys.add(run.key)
        if applies:
            self.effects[name] = min(2, self.effects.get(name, 0) + 1)

    def _finish(self, label: Label, ok: bool) -> None:
        worker = self.workers[label[2]]
        run = self.runs.pop((label[1], worker.name))
        if not run.started_sent:
            self._from_worker(worker, p.Started(self.clock, run.worker, run.attempt))
        self._from_worker(worker, p.Finished(self.clock, run.worker, run.attempt, ok))

    def _do_finish_ok(self, label: Label) -> None:
        self._finish(label, True)

    def _do_finish_fail(self, label: Label) -> None:
        self._finish(label, False)

    def _kill(self, worker: _Worker) -> None:
        for key in [k for k in self.runs if k[1] == worker.name]:
            del self.runs[key]
        worker.held.clear()
        self.sent.pop(worker.name, None)

    def _do_crash(self, label: Label) -> None:
        worker = self.workers[label[1]]
        self._kill(worker)
        worker.connection = "crashed"

    def _do_disconnect(self, label: Label) -> None:
        self.workers[label[1]].connection = "cut"

    def _do_reconnect(self, label: Label) -> None:
        worker = self.workers[label[1]]
        was = worker.connection
        worker.connection = "up"
        if was == "restart-cut":
            running = tuple(run.attempt for run in self.runs.values()
                            if run.worker == worker.name)
            running += tuple(e.attempt for e in worker.held if isinstance(e, p.Finished))
            self._send(p.Connected(self.clock, worker.name, running))
        held, worker.held = worker.held, []
        for event in held:
            self._send(event)

    def _do_detect(self, label: Label) -> None:
        worker = self.workers[label[1]]
        timer = self._timer(p.TimerKind.HEARTBEAT_TIMEOUT, subject=worker.name)
        if timer is not None:
            self._fire(timer)
        self._kill(worker)
        worker.connection = "lost"

    def _do_rejoin(self, label: Label) -> None:
        worker = self.workers[label[1]]
        worker.connection = "up"
        self._send(p.Connected(self.clock, worker.name))

    def _do_restart(self, label: Label) -> None:
        self.executor = guard.build(self.factory, executor_config(self.config), True)
        self.timers.clear()
        self.sent.clear()
        for worker in self.workers:
            if worker.connection in ("up", "cut"):
                worker.connection = "restart-cut"
        self._carry_out(self.executor.recover(list(self.journal), self.clock))

    def _report(self, only: str | None) -> None:
        """The reconcile job: every pending report, or only the one for key `only` before it
        crashes."""
        snapshot = self.executor.snapshot(SESSION)
        for pending in pending_reports(SESSION, snapshot.messages):
            if only is not None and pending.key != only:
                continue
            self.requests += 1
            request = f"r{self.requests}"
            self._send(p.UserMessage(self.clock, request, SESSION,
                                     report_text("the harness", "checked", pending.key)))

    def _do_reconcile(self, label: Label) -> None:
        self._report(None)

    def _do_reconcile_crash(self, label: Label) -> None:
        self._report(self.keys[label[1]])

    # -- comparison ----------------------------------------------------------------------------

    def compare(self) -> None:
        """The executor's observable state must be the model's."""
        snapshot = self.executor.snapshot(SESSION)
        views = {f"{SESSION}/{v.turn_id}/{v.tool_call_id}": v for v in snapshot.tool_calls}
        reported = _reported(snapshot)
        for i, c in enumerate(self.system.calls_of(self.state)):
            key = self.keys[i]
            view = views.get(key)
            if view is None:
                raise Disagreement(f"call {i} ({key}) is missing from the snapshot")
            expected = _status(c[m.CS])
            if view.status is not expected:
                raise Disagreement(f"call {i} ({key}) is {view.status.value} on the executor "
                                   f"but {expected.value} in the model")
            if c[m.FK]:
                opening = failure_text(m.FAILURE_OF_INDEX[c[m.FK]])
                if not view.error.startswith(opening):
                    raise Disagreement(f"call {i} ({key}) failed with {view.error!r}, the model "
                                       f"says {opening!r}")
            if c[m.CS] == m.C_REJECTED:
                reason = RejectReason.DEADLINE if c[m.G] & m.G_DEADLINE else RejectReason.PERSON
                if view.error != reject_text(reason):
                    raise Disagreement(f"call {i} ({key}) was rejected with {view.error!r}, "
                                       f"the model says {reject_text(reason)!r}")
            hands = m.hands(c[m.G])
            if self.hand_outs.get(key, 0) != hands:
                raise Disagreement(f"call {i} ({key}) was handed out "
                                   f"{self.hand_outs.get(key, 0)} times, the model says {hands}")
            published = self.published.get(key, [])
            if len(published) != m.record_writes(c[m.G]):
                raise Disagreement(f"call {i} ({key}) published {len(published)} records, the "
                                   f"model wrote {m.record_writes(c[m.G])}")
            if c[m.CS] == m.C_UNKNOWN and reported.get(key, 0) != c[m.REP]:
                raise Disagreement(f"call {i} ({key}) was reported {reported.get(key, 0)} "
                                   f"times, the model says {c[m.REP]}")
        for t, tool in enumerate(self.config.tools):
            expected_effects = self.state[m.TE] >> (2 * t) & 3
            if self.effects.get(tool.name, 0) != expected_effects:
                raise Disagreement(f"the service of {tool.name} applied "
                                   f"{self.effects.get(tool.name, 0)} effects, the model "
                                   f"{expected_effects}")


def _status(cs: int) -> ToolCallStatus:
    record = m.RECORD_OF_STATE.get(cs)
    if record is not None:
        return ToolCallStatus.of_record(record)
    return ToolCallStatus.AWAITING_APPROVAL if cs == m.C_AWAIT else ToolCallStatus.RUNNING


def _reported(snapshot: object) -> dict[str, int]:
    from atmostonce.spec.session import AgentSnapshot, MessageRole

    assert isinstance(snapshot, AgentSnapshot)
    counts: dict[str, int] = {}
    for message in snapshot.messages:
        if message.role is MessageRole.USER:
            for key in _keys_in(message.text):
                counts[key] = counts.get(key, 0) + 1
    return counts


def _keys_in(text: str) -> list[str]:
    import re

    return re.findall(r"\(tool call ([^\s()]+)\)", text)


# ---------------------------------------------------------------------------------------------
# Replaying every schedule the explorer reaches within a depth


@dataclass
class ConformanceResult:
    """What replaying the model's schedules on an executor showed."""

    depth: int
    schedules: int = 0
    steps: int = 0
    diverged: int = 0
    """Schedules cut short where the executor picked another (allowed) queued attempt."""
    disagreements: list[tuple[list[str], str]] = field(default_factory=list)
    breaches: list[tuple[list[str], str]] = field(default_factory=list)
    """Schedules on which the executor stepped outside the protocol: the steps taken, and the
    breach (the call that caused it and what was wrong)."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.disagreements and not self.breaches


def schedules(config: ModelConfig, depth: int, edges: bool = False) -> Iterator[list[Label]]:
    """Concrete label sequences from the initial state, within `depth` steps. By default one per
    leaf of the explorer's search tree: together they visit every state reachable in `depth`
    steps. With `edges`, one per transition out of every state reachable in fewer steps (the
    state's shortest schedule, then that transition): every step the model allows within the
    depth is taken at least once, which also visits every state."""
    system = System(config)
    explorer = Explorer(system, stop_at_first=False, max_depth=depth)
    explorer.run()
    canonical = system.canonical
    has_child = set(explorer.parent)
    concrete: list[tuple[State, list[Label]]] = []
    for node, goal in enumerate(explorer.states):
        if node == 0:
            state, labels = system.initial(), []
        else:
            before, prefix = concrete[explorer.parent[node]]
            succ = next(t for t in system.successors(before) if canonical(t.state) == goal)
            state, labels = succ.state, [*prefix, succ.label]
        concrete.append((state, labels))
        if not edges:
            if node not in has_child:
                yield labels
        elif len(labels) < depth:
            for succ in system.successors(state):
                if canonical(succ.state) != goal:
                    yield [*labels, succ.label]


def replay_schedules(config: ModelConfig, factory: p.ExecutorFactory, depth: int,
                     progress: Callable[[int], None] | None = None,
                     stop_at_first: bool = True, edges: bool = False) -> ConformanceResult:
    """Replay every schedule within `depth` (see `schedules`) on a fresh executor each;
    collect disagreements."""
    import time

    started = time.monotonic()
    result = ConformanceResult(depth)
    for labels in schedules(config, depth, edges):
        result.schedules += 1
        taken: list[str] = []
        try:
            lock = Lockstep(config, factory)
            taken = lock.log
            for label in labels:
                lock.step(label)
                result.steps += 1
                if lock.diverged:
                    result.diverged += 1
                    break
        except Disagreement as error:
            result.disagreements.append((taken, str(error)))
        except guard.ProtocolBreach as breach:
            result.breaches.append((taken, str(breach)))
        if stop_at_first and not result.ok:
            break
        if progress is not None and result.schedules % 500 == 0:
            progress(result.schedules)
    result.seconds = time.monotonic() - started
    return result


