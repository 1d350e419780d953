"""The composed model explored the obvious way: objects driven by `transitions` machines.

This is the yardstick `benchmarks/explore.py` measures the real explorer against, and an
independent statement of the semantics of `atmostonce.model.system.System`;
`tests/model/test_naive_explorer.py` proves both reach the same orbits. It uses none of the real
explorer's techniques: no compiled tables, no interned ids, no memo, no symmetry reduction.

The world is a set of component objects: calls (each with its Step, its current attempt, the
runs of its tool and the ledger of its idempotency key), workers, each tool's service ledger,
and the budgets. Every lifecycle state is held by a `transitions` model: each component kind
shares one `Machine` built with `MachineDef.build` from `atmostonce.model.machines`, and a
component joins it with `add_model` when it is made and leaves it with `remove_model` when it is
dropped, so a machine's model list holds only the worlds in hand. A successor is an explicit
clone of the world (`copy.deepcopy` would copy the machine along with each model's bound trigger
methods) on which the action fires its triggers; visited states are hashable snapshots of the
whole world, and the frontier keeps snapshots, from which a world is rebuilt to be expanded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from itertools import permutations
from typing import Any, ClassVar, NamedTuple

from transitions import Machine

from atmostonce.model import machines
from atmostonce.model.config import ModelConfig
from atmostonce.model.machines import MachineDef
from atmostonce.spec.policy import EffectClass, EffectivePolicy
from atmostonce.spec.records import AttemptEnd, Decision, FailureKind, Record, decide

RECORDS = frozenset(r.value for r in Record)
OUT = ("handed", "started", "running")
"""Attempt states in which the attempt counts as reached (D-5): the server recorded the hand-out."""

END_TRIGGER = {
    "not_reached": "expire", "returned": "return_result", "tool_failed": "report_failure",
    "worker_lost": "lose", "lost_at_restart": "lose", "cancelled": "time_out",
}
SPEC_END = {
    "not_reached": AttemptEnd.NOT_REACHED, "returned": AttemptEnd.RETURNED,
    "tool_failed": AttemptEnd.TOOL_FAILED, "worker_lost": AttemptEnd.WORKER_LOST,
    "lost_at_restart": AttemptEnd.WORKER_LOST, "cancelled": AttemptEnd.CANCELLED,
}
FAILURE_TRIGGER = {
    FailureKind.TOOL_ERROR: "tool_failed", FailureKind.DID_NOT_RUN: "did_not_run",
    FailureKind.MAY_HAVE_RUN: "may_have_run", FailureKind.MAY_STILL_BE_RUNNING: "may_still_run",
}


# ---------------------------------------------------------------------------------------------
# Components: each instance is a `transitions` model of its kind's shared machine.


class Component:
    """A component whose lifecycle state (`state`) the shared machine of its kind keeps."""

    machine: ClassVar[Machine]
    state: str
    trigger: Callable[[str], bool]

    def __init_subclass__(cls, definition: MachineDef, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.machine = definition.build()

    def __init__(self, state: str) -> None:
        self.machine.add_model(self, initial=state)

    def fire(self, trigger: str) -> None:
        """Fire `trigger`; `transitions` raises MachineError where the definition forbids it."""
        self.trigger(trigger)

    def release(self) -> None:
        self.machine.remove_model(self)


class CallToolStep(Component, definition=machines.CALL_TOOL):
    """The Step of a call that may be retried (read, idempotent write)."""


class SingleAttemptStep(Component, definition=machines.CALL_SINGLE_ATTEMPT_TOOL):
    """The Step of a call with exactly one attempt."""


class Attempt(Component, definition=machines.ATTEMPT):
    """A call's current attempt and the worker it is handed to."""

    def __init__(self, state: str, worker: int | None = None) -> None:
        super().__init__(state)
        self.worker = worker


class Worker(Component, definition=machines.WORKER):
    """A worker as the server sees it."""


class Run(Component, definition=machines.RUN):
    """The tool running on `worker` for attempt number `number` of its call."""

    def __init__(self, state: str, worker: int, number: int) -> None:
        super().__init__(state)
        self.worker = worker
        self.number = number


class KeyedLedger(Component, definition=machines.KEYED_LEDGER):
    """What the service did with one idempotency key."""


class PlainLedger(Component, definition=machines.PLAIN_LEDGER):
    """How many times a tool's service applied its effect (up to two)."""


Step = CallToolStep | SingleAttemptStep


# ---------------------------------------------------------------------------------------------
# Snapshots: the hashable form of a world.


class CallSnap(NamedTuple):
    tool: int
    policy: int
    ask_policy: int
    step: str
    failure: str | None
    attempts: int
    reached: bool
    attempt: str
    attempt_worker: int | None
    runs: tuple[tuple[int, str, int], ...]
    ledger: str
    abandoned_on: int | None
    reports: int
    asked_again: bool
    ghost: tuple[bool, int, bool, int, int, bool, str | None, bool, bool]
    """(is a re-ask, hand-outs, a result was delivered, runs started, record writes,
    approved, how the last attempt ended, a heartbeat reached the server since, rejected by
    the approval deadline)."""


class WorldSnap(NamedTuple):
    asks: int
    reasks: int
    crashes: int
    partitions: int
    restarts: int
    timeouts: int
    policy_changes: int
    reconcile_crashes: int
    faults: int
    changed: tuple[bool, ...]
    services: tuple[str, ...]
    workers: tuple[str, ...]
    calls: tuple[CallSnap, ...]


def orbit(snap: WorldSnap) -> WorldSnap:
    """One representative of the snapshot's orbit under renaming workers and reordering calls:
    the least renaming, compared as text. Used to compare explorers, never while exploring."""
    best: WorldSnap | None = None
    best_text = ""
    for perm in permutations(range(len(snap.workers))):
        new_of = {old: new for new, old in enumerate(perm)}
        calls = sorted(
            (c._replace(attempt_worker=_renamed(new_of, c.attempt_worker),
                        abandoned_on=_renamed(new_of, c.abandoned_on),
                        runs=tuple(sorted((new_of[w], s, n) for w, s, n in c.runs)))
             for c in snap.calls),
            key=repr,
        )
        key = snap._replace(workers=tuple(snap.workers[old] for old in perm),
                            calls=tuple(calls))
        text = repr(key)
        if best is None or text < best_text:
            best, best_text = key, text
    assert best is not None
    return best


def _renamed(new_of: dict[int, int], w: int | None) -> int | None:
    return None if w is None else new_of[w]


# ---------------------------------------------------------------------------------------------
# The world.


@dataclass(frozen=True)
class Rules:
    """What the configuration fixes: the bounds, each tool's policy before and after a policy
    change, and what each tool does to its service."""

    config: ModelConfig
    policies: tuple[tuple[EffectivePolicy, EffectivePolicy], ...]
    effects: tuple[EffectClass, ...]

    @classmethod
    def of(cls, config: ModelConfig) -> Rules:
        return cls(config, tuple((t.variant(False), t.variant(True)) for t in config.tools),
                   tuple(t.effect for t in config.tools))


@dataclass(eq=False)
class Call:
    """One tool call, with the ghost bookkeeping the properties read (the protocol never does)."""

    tool: int
    policy: int
    ask_policy: int
    step: Step
    attempt: Attempt
    ledger: KeyedLedger
    runs: list[Run] = field(default_factory=list)
    failure: FailureKind | None = None
    attempts: int = 0
    reached: bool = False
    abandoned_on: int | None = None
    reports: int = 0
    asked_again: bool = False
    is_reask: bool = False
    hands: int = 0
    ok_delivered: bool = False
    runs_started: int = 0
    record_writes: int = 0
    approved: bool = False
    last_end: str | None = None
    heartbeat: bool = False
    deadline_passed: bool = False

    @property
    def single(self) -> bool:
        return isinstance(self.step, SingleAttemptStep)

    @property
    def in_flight(self) -> bool:
        return self.step.state not in RECORDS

    def clone(self) -> Call:
        return replace(
            self,
            step=type(self.step)(self.step.state),
            attempt=Attempt(self.attempt.state, self.attempt.worker),
            ledger=KeyedLedger(self.ledger.state),
            runs=[Run(r.state, r.worker, r.number) for r in self.runs],
        )

    def components(self) -> Iterator[Component]:
        yield self.step
        yield self.attempt
        yield self.ledger
        yield from self.runs

    def snapshot(self) -> CallSnap:
        return CallSnap(
            self.tool, self.policy, self.ask_policy, self.step.state,
            self.failure.value if self.failure else None, self.attempts, self.reached,
            self.attempt.state, self.attempt.worker,
            tuple((r.worker, r.state, r.number) for r in self.runs), self.ledger.state,
            self.abandoned_on, self.reports, self.asked_again,
            (self.is_reask, self.hands, self.ok_delivered, self.runs_started,
             self.record_writes, self.approved, self.last_end, self.heartbeat,
             self.deadline_passed),
        )

    @classmethod
    def restore(cls, rules: Rules, s: CallSnap) -> Call:
        single = not rules.policies[s.tool][s.policy].retries_allowed
        step: Step = SingleAttemptStep(s.step) if single else CallToolStep(s.step)
        (is_reask, hands, ok_delivered, runs_started, record_writes, approved, last_end,
         heartbeat, deadline_passed) = s.ghost
        return cls(
            s.tool, s.policy, s.ask_policy, step, Attempt(s.attempt, s.attempt_worker),
            KeyedLedger(s.ledger), [Run(st, w, n) for w, st, n in s.runs],
            FailureKind(s.failure) if s.failure else None, s.attempts, s.reached,
            s.abandoned_on, s.reports, s.asked_again, is_reask, hands, ok_delivered,
            runs_started, record_writes, approved, last_end, heartbeat, deadline_passed,
        )


Action = tuple[str, tuple[int, ...]]


@dataclass(eq=False)
class World:
    """Budgets, policy versions, service ledgers, workers and calls: one state of the model."""

    rules: Rules
    asks: int
    reasks: int
    crashes: int
    partitions: int
    restarts: int
    timeouts: int
    policy_changes: int
    reconcile_crashes: int
    faults: int
    changed: list[bool]
    services: list[PlainLedger]
    workers: list[Worker]
    calls: list[Call]

    @classmethod
    def initial(cls, rules: Rules) -> World:
        c = rules.config
        return cls(rules, c.calls, c.reasks, c.crashes, c.partitions, c.restarts, c.timeouts,
                   c.policy_changes, c.reconcile_crashes, c.faults, [False] * len(c.tools),
                   [PlainLedger("empty") for _ in c.tools],
                   [Worker("up") for _ in range(c.workers)], [])

    @classmethod
    def restore(cls, rules: Rules, s: WorldSnap) -> World:
        return cls(rules, s.asks, s.reasks, s.crashes, s.partitions, s.restarts, s.timeouts,
                   s.policy_changes, s.reconcile_crashes, s.faults, list(s.changed),
                   [PlainLedger(st) for st in s.services], [Worker(st) for st in s.workers],
                   [Call.restore(rules, c) for c in s.calls])

    def clone(self) -> World:
        return replace(
            self,
            changed=list(self.changed),
            services=[PlainLedger(s.state) for s in self.services],
            workers=[Worker(w.state) for w in self.workers],
            calls=[c.clone() for c in self.calls],
        )

    def release(self) -> None:
        """Take every component off its machine; the world is not used again."""
        for s in self.services:
            s.release()
        for w in self.workers:
            w.release()
        for c in self.calls:
            for component in c.components():
                component.release()

    def snapshot(self) -> WorldSnap:
        return WorldSnap(
            self.asks, self.reasks, self.crashes, self.partitions, self.restarts, self.timeouts,
            self.policy_changes, self.reconcile_crashes, self.faults, tuple(self.changed),
            tuple(s.state for s in self.services), tuple(w.state for w in self.workers),
            tuple(c.snapshot() for c in self.calls),
        )

    # -- what is enabled -----------------------------------------------------------------------

    def holding(self, w: int) -> bool:
        """Whether work names worker `w`: an attempt handed to it, or a run on it."""
        return any(
            (c.attempt.state == "handed" and c.attempt.worker == w)
            or any(r.worker == w for r in c.runs)
            for c in self.calls
        )

    def fenced(self, tool: int) -> bool:
        """With the fence on, a call of `tool` waits while a run of the tool was abandoned."""
        return self.rules.config.fence and any(
            c.tool == tool and c.abandoned_on is not None for c in self.calls)

    def actions(self) -> Iterator[Action]:
        """Every action enabled in this world, as (name, arguments) for `perform`.

        The environment is restricted as the model is: faults strike only workers holding
        work (on an idle worker a fault only delays work), a policy changes only while a call
        of its tool is in flight, and the reconcile job runs once no call is in flight. A
        queued attempt is offered to every idle worker that is up.
        """
        for i, c in enumerate(self.calls):
            yield from self._call_actions(i, c)
        for w, worker in enumerate(self.workers):
            st = worker.state
            holding = self.holding(w)
            if st in ("up", "disconnected") and holding and self.faults and self.crashes:
                yield "crash", (w,)
            if st == "up":
                if holding and self.faults and self.partitions:
                    yield "disconnect", (w,)
            elif st == "disconnected":
                yield "reconnect", (w,)
                yield "detect", (w,)
            elif st == "crashed":
                yield "detect", (w,)
            elif st == "down":
                yield "rejoin", (w,)
        if self.asks:
            for t in range(len(self.rules.config.tools)):
                yield "ask", (t,)
        waiting = self.rules.config.restart_while_waiting
        if self.restarts and self.faults and any(
                c.attempt.state in OUT or (waiting and c.step.state == "awaiting_approval")
                for c in self.calls):
            yield "restart", ()
        if self.policy_changes:
            for t in range(len(self.rules.config.tools)):
                if any(c.tool == t and c.in_flight for c in self.calls):
                    yield "change_policy", (t,)
        if not any(c.in_flight for c in self.calls) and self._unreported():
            yield "reconcile", ()
            if self.reconcile_crashes:
                for i, c in enumerate(self.calls):
                    if c in self._unreported():
                        yield "reconcile_crash", (i,)

    def _call_actions(self, i: int, c: Call) -> Iterator[Action]:
        st = c.step.state
        if st == "awaiting_approval":
            yield "approve", (i,)
            yield "reject", (i,)
            yield "deadline", (i,)
        elif st == "attempting":
            a = c.attempt.state
            if a == "queued":
                yield "expire", (i,)
                if not (c.single and self.fenced(c.tool)):
                    for w, worker in enumerate(self.workers):
                        if worker.state == "up" and not self.holding(w):
                            yield "hand", (i, w)
            elif a == "handed":
                if self._up(c.attempt.worker):
                    yield "go", (i,)
            elif a == "started" and self._up(c.attempt.worker):
                yield "heartbeat", (i,)
            if a in ("started", "running") and self.timeouts and self.faults:
                yield "time_out", (i,)
        for r, run in enumerate(c.runs):
            if run.state == "started":
                if self.rules.effects[c.tool] is EffectClass.READ:
                    yield "finish", (i, r, 1)
                else:
                    yield "apply", (i, r)
                yield "finish", (i, r, 0)
            elif run.state == "applied":
                yield "finish", (i, r, 1)
                yield "finish", (i, r, 0)
        if st in ("failed", "outcome_unknown") and not c.asked_again and self.reasks:
            yield "reask", (i,)

    def _up(self, w: int | None) -> bool:
        return w is not None and self.workers[w].state == "up"

    def _unreported(self) -> list[Call]:
        return [c for c in self.calls if c.step.state == "outcome_unknown" and not c.reports]

    # -- what each action does -----------------------------------------------------------------

    def perform(self, action: Action) -> None:
        name, args = action
        getattr(self, f"do_{name}")(*args)

    def do_approve(self, i: int) -> None:
        c = self.calls[i]
        c.step.fire("approve")
        c.approved = True
        c.attempts = 1
        c.attempt.fire("schedule")

    def do_reject(self, i: int) -> None:
        self.calls[i].step.fire("reject")
        self.calls[i].record_writes += 1

    def do_deadline(self, i: int) -> None:
        self.calls[i].step.fire("deadline")
        self.calls[i].record_writes += 1
        self.calls[i].deadline_passed = True

    def do_expire(self, i: int) -> None:
        self._end_attempt(self.calls[i], "not_reached")

    def do_hand(self, i: int, w: int) -> None:
        c = self.calls[i]
        c.attempt.fire("hand")
        c.attempt.worker = w
        c.hands += 1

    def do_go(self, i: int) -> None:
        c = self.calls[i]
        c.attempt.fire("go")
        c.runs_started += 1
        assert c.attempt.worker is not None
        c.runs.append(Run("started", c.attempt.worker, c.attempts))

    def do_heartbeat(self, i: int) -> None:
        c = self.calls[i]
        c.attempt.fire("heartbeat")
        c.heartbeat = True

    def do_time_out(self, i: int) -> None:
        c = self.calls[i]
        self.timeouts -= 1
        self.faults -= 1
        self._abandon(c)
        self._end_attempt(c, "cancelled")

    def do_apply(self, i: int, r: int) -> None:
        """The write takes effect at the tool's service, unless the service drops it as a
        repeat: of the call's idempotency key (every class but a non-idempotent write, which
        `--ledger key` adds), or of the business key every call of the tool shares."""
        c = self.calls[i]
        c.runs[r].fire("apply")
        service = self.services[c.tool]
        ledger = self.rules.config.ledger
        applies = True
        if self.rules.effects[c.tool] is not EffectClass.NON_IDEMPOTENT_WRITE or ledger == "key":
            applies = c.ledger.state == "empty"
            c.ledger.fire("write")
        elif ledger == "business":
            applies = service.state == "empty"
        if applies:
            service.fire("write")

    def do_finish(self, i: int, r: int, ok: int) -> None:
        """The tool returns or reports a failure; a cut-off worker holds the result."""
        c = self.calls[i]
        run = c.runs[r]
        if self.workers[run.worker].state == "up":
            run.fire("finish_ok" if ok else "finish_fail")
            del c.runs[r]
            run.release()
            self._deliver(c, run.worker, run.number, bool(ok))
        else:
            run.fire("hold_ok" if ok else "hold_fail")

    def do_reask(self, i: int) -> None:
        c = self.calls[i]
        c.asked_again = True
        self.reasks -= 1
        self.calls.append(self._new_call(c.tool, reask=True))

    def do_crash(self, w: int) -> None:
        self.crashes -= 1
        self.faults -= 1
        self.workers[w].fire("crash")
        for c in self.calls:
            self._kill_runs(c, w)

    def do_disconnect(self, w: int) -> None:
        self.partitions -= 1
        self.faults -= 1
        self.workers[w].fire("disconnect")

    def do_reconnect(self, w: int) -> None:
        """The connection resumes: the results the worker held reach the server, and so does
        what it still runs, which settles a run the server had abandoned."""
        self.workers[w].fire("reconnect")
        for c in self.calls:
            held = [r for r in c.runs if r.worker == w and r.state in ("held_ok", "held_failure")]
            for run in held:
                c.runs.remove(run)
            for run in held:
                ok = run.state == "held_ok"
                run.fire("deliver")
                run.release()
                self._deliver(c, w, run.number, ok)
            if c.abandoned_on == w and not any(r.worker == w for r in c.runs):
                c.abandoned_on = None

    def do_detect(self, w: int) -> None:
        """The heartbeat timeout declares the worker lost; a cut-off worker has stopped its
        runs by then, as its lease ran out (self-fence)."""
        self.workers[w].fire("detect")
        for c in self.calls:
            self._kill_runs(c, w)
            if c.attempt.worker == w and c.attempt.state in OUT:
                self._end_attempt(c, "worker_lost")
            if c.abandoned_on == w:
                c.abandoned_on = None

    def do_rejoin(self, w: int) -> None:
        self.workers[w].fire("rejoin")

    def do_ask(self, t: int) -> None:
        self.asks -= 1
        self.calls.append(self._new_call(t, reask=False))

    def do_restart(self) -> None:
        """The server restarts: connections drop and every attempt out is lost, its run maybe
        going on; a queued attempt stays queued."""
        self.restarts -= 1
        self.faults -= 1
        for worker in self.workers:
            worker.fire("server_restart")
        for c in self.calls:
            if c.attempt.state in OUT:
                self._abandon(c)
                self._end_attempt(c, "lost_at_restart")

    def do_change_policy(self, t: int) -> None:
        self.policy_changes -= 1
        self.changed[t] = not self.changed[t]

    def do_reconcile(self) -> None:
        for c in self._unreported():
            c.reports += 1

    def do_reconcile_crash(self, i: int) -> None:
        """The reconcile job crashes right after one of its reports, the one for call `i`."""
        self.reconcile_crashes -= 1
        self.calls[i].reports += 1

    # -- shared steps --------------------------------------------------------------------------

    def _new_call(self, tool: int, reask: bool) -> Call:
        """A call keeps the policy its tool has when it is asked (TC-SNAP-1)."""
        variant = int(self.changed[tool])
        policy = self.rules.policies[tool][variant]
        step: Step = (CallToolStep("asked") if policy.retries_allowed
                      else SingleAttemptStep("asked"))
        c = Call(tool, variant, variant, step, Attempt("none"), KeyedLedger("empty"),
                 is_reask=reask)
        if policy.requires_approval:
            step.fire("needs_approval")
        else:
            step.fire("start")
            c.attempt.fire("schedule")
            c.attempts = 1
        return c

    def _end_attempt(self, c: Call, end: str) -> None:
        """The current attempt ended with `end`; the spec's `decide` chooses between another
        attempt and the record."""
        limit = 1 if c.single else self.rules.config.max_attempts
        was = c.attempt.state
        c.attempt.fire(END_TRIGGER[end])
        c.attempt.fire("reset")
        effect = self.rules.policies[c.tool][c.policy].effect
        d = decide(effect, SPEC_END[end], c.attempts, limit, c.reached)
        c.step.fire(_trigger(d))
        c.last_end = end
        c.heartbeat = False
        c.reached = c.reached or was in OUT
        c.attempt.worker = None
        if d.retry:
            c.attempts += 1
            c.attempt.fire("schedule")
        else:
            c.failure = d.failure
            c.record_writes += 1

    def _abandon(self, c: Call) -> None:
        """The server gives up on the attempt while its run may go on (TC-AMO-3); not knowing
        whether the run exists, it counts a single-attempt call's run as possibly going on."""
        for run in c.runs:
            if run.worker == c.attempt.worker:
                run.fire("cancel")
        if c.single:
            c.abandoned_on = c.attempt.worker

    def _deliver(self, c: Call, w: int, number: int, ok: bool) -> None:
        """A run's result reaches the server: it decides the attempt it belongs to, or is late."""
        if (c.attempts == number and c.attempt.worker == w
                and c.attempt.state in ("started", "running")):
            if ok:
                c.ok_delivered = True
            self._end_attempt(c, "returned" if ok else "tool_failed")
        elif c.abandoned_on == w:
            c.abandoned_on = None

    def _kill_runs(self, c: Call, w: int) -> None:
        for run in [r for r in c.runs if r.worker == w]:
            run.fire("kill")
            c.runs.remove(run)
            run.release()


def _trigger(d: Decision) -> str:
    """The Step's trigger for a decision of `decide`."""
    if d.retry:
        return "retry"
    if d.record is Record.SUCCEEDED:
        return "returned"
    if d.record is Record.OUTCOME_UNKNOWN:
        return "unknown"
    assert d.failure is not None
    return FAILURE_TRIGGER[d.failure]


# ---------------------------------------------------------------------------------------------
# The explorer.


@dataclass
class NaiveResult:
    """Distinct states found (`states`), how many were expanded, and whether that was all."""

    states: int = 0
    expanded: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    complete: bool = True

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


class NaiveExplorer:
    """Breadth-first search over world snapshots, optionally stopped after `seconds`."""

    def __init__(self, config: ModelConfig, *, seconds: float | None = None) -> None:
        self.rules = Rules.of(config)
        self.seconds = seconds
        self.states: list[WorldSnap] = []

    def run(self) -> NaiveResult:
        result = NaiveResult()
        started = time.monotonic()
        deadline = None if self.seconds is None else started + self.seconds
        first = World.initial(self.rules)
        init = first.snapshot()
        first.release()
        seen = {init}
        states = self.states
        states.append(init)
        depth_end = 1
        i = 0
        while i < len(states):
            if deadline is not None and time.monotonic() >= deadline:
                result.complete = False
                break
            if i == depth_end:
                result.depth += 1
                depth_end = len(states)
            world = World.restore(self.rules, states[i])
            for action in world.actions():
                successor = world.clone()
                successor.perform(action)
                snap = successor.snapshot()
                successor.release()
                result.transitions += 1
                if snap not in seen:
                    seen.add(snap)
                    states.append(snap)
            world.release()
            i += 1
        result.expanded = i
        result.states = len(states)
        result.seconds = time.monotonic() - started
        return result
