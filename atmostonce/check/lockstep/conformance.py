"""Conformance: an executor under test and the model, driven in lockstep.

The harness plays the environment of the model (the agent's model, people, workers, their
connections, the services tools write to, timers, restarts) against the executor through the
protocol. Each model step is translated into protocol events; the one step the executor decides
for itself, which queued attempt a polling worker gets, is read back from its commands and must
be a step the model allows. After every step the executor's observable state (each call's
status and error, the policy and approval deadline it kept and its approval timer, its attempt
history, how often it was handed out, records published, reports sent) and the services'
ledgers must agree with the model's.

`replay_schedules` replays, within a depth, the shortest schedule of every state the explorer
reaches, or that schedule followed by each transition out of the state; `Lockstep` is also what
the Hypothesis state machine in the tests drives.

The executor is driven through `atmostonce.check.executors.guard`, with its journal entries checked
to be JSON: an executor that raises, or answers outside the protocol's types, is a `ProtocolBreach`,
reported like a disagreement with the schedule that led to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from atmostonce.check.executors import guard
from atmostonce.check.lockstep.environment import EnvironmentActions
from atmostonce.check.lockstep.state import SESSION, Disagreement
from atmostonce.check.lockstep.views import (
    history_problem,
    kept_deadline,
    policy_problem,
    timer_problem,
)
from atmostonce.model import layout as m
from atmostonce.model.config import ModelConfig
from atmostonce.model.explorer import Explorer
from atmostonce.model.layout import Label, State
from atmostonce.model.system import System
from atmostonce.spec import protocol as p
from atmostonce.spec.records import (
    FailureKind,
    Outcome,
    Record,
    RejectReason,
    failure_text,
    reject_text,
)
from atmostonce.spec.session import (
    AgentSnapshot,
    MessageRole,
    ToolCallStatus,
    ToolCallView,
    tool_result_text,
)
from atmostonce.spec.step_kinds import StepKind


class Lockstep(EnvironmentActions):
    """One executor and one concrete model state, stepped together: the state and the protocol
    plumbing are `atmostonce.check.lockstep.state`'s, the environment's actions
    `atmostonce.check.lockstep.environment`'s."""

    # -- stepping ------------------------------------------------------------------------------

    def step(self, label: Label) -> None:
        """Take one model step on both sides and compare."""
        self.clock += 1.0
        kind = label[0]
        self.log.append(self._describe(label))
        getattr(self, f"_do_{kind}")(label)
        if kind != StepKind.HAND:
            self._advance(label)
        self.compare()
        if kind in (StepKind.APPROVE, StepKind.REJECT, StepKind.DEADLINE):
            self._probe_answers(label[1])
        elif kind in (StepKind.ASK, StepKind.REASK):
            self._probe_answers(len(self.keys) - 1)
        self._probe_polls()

    def _probe_polls(self) -> None:
        """When the model hands out nothing, every idle worker that is up gets no work: this
        is where a fence, an approval or a record must hold an attempt back."""
        if any(label[0] == StepKind.HAND for label in self.enabled()):
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

    def _describe(self, label: Label) -> str:
        kind, a, b = label
        return f"{kind}({a}, {b})" if b >= 0 else f"{kind}({a})" if a >= 0 else kind

    # -- comparison ----------------------------------------------------------------------------

    def compare(self) -> None:
        """The executor's observable state must be the model's."""
        snapshot = self.executor.snapshot(SESSION)
        views = {f"{SESSION}/{v.turn_id}/{v.tool_call_id}": v for v in snapshot.tool_calls}
        reported = reported_counts(snapshot)
        results = _tool_results(snapshot)
        for i, c in enumerate(self.system.calls_of(self.state)):
            key = self.keys[i]
            view = views.get(key)
            if view is None:
                raise Disagreement(f"call {i} ({key}) is missing from the snapshot")
            expected = status_of_state(c[m.CS])
            if view.status is not expected:
                raise Disagreement(f"call {i} ({key}) is {view.status.value} on the executor "
                                   f"but {expected.value} in the model")
            if c[m.FK]:
                kind = m.FAILURE_OF_INDEX[c[m.FK]]
                opening = failure_text(kind)
                if not view.error.startswith(opening):
                    raise Disagreement(f"call {i} ({key}) failed with {view.error!r}, the model "
                                       f"says {opening!r}")
                failures = self.failures.get(key, set())
                if kind is FailureKind.TOOL_ERROR and not any(f in view.error for f in failures):
                    raise Disagreement(f"call {i} ({key}) failed with {view.error!r}, which "
                                       "carries none of the failures its tool reported "
                                       f"{sorted(failures)!r} (D-3)")
            if c[m.CS] == m.C_REJECTED:
                reason = RejectReason.DEADLINE if c[m.G] & m.G_DEADLINE else RejectReason.PERSON
                if view.error != reject_text(reason):
                    raise Disagreement(f"call {i} ({key}) was rejected with {view.error!r}, "
                                       f"the model says {reject_text(reason)!r}")
            self._compare_kept(i, key, c, view)
            self._compare_result(i, key, view, results.get(key, []))
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


    def _compare_result(self, i: int, key: str, view: ToolCallView, results: list[str]
                        ) -> None:
        """A recorded call's record reaches the model once, as the tool result its record and
        error make, and its event says what the snapshot says; a call without a record has
        no tool result yet (TC-REC-2, TC-RCN-1)."""
        if not view.status.final:
            if results:
                raise Disagreement(f"call {i} ({key}) has no record yet but the session history "
                                   f"holds its tool result {results[0]!r}")
            return
        if len(results) != 1:
            raise Disagreement(f"call {i} ({key}) recorded {view.status.value}, and the session "
                               f"history holds {len(results)} tool results for it, not one "
                               "(TC-REC-2)")
        record = Record(view.status.value)
        if record is Record.SUCCEEDED:
            if results[0] not in self.outputs.get(key, ()):
                raise Disagreement(f"call {i} ({key}) succeeded, but its tool result "
                                   f"{results[0]!r} is no output its runs returned (TC-REC-2)")
        else:
            expected = tool_result_text(Outcome(record, view.error))
            if results[0] != expected:
                raise Disagreement(f"call {i} ({key}) recorded {record.value}, and its tool "
                                   f"result reads {results[0]!r}, not {expected!r} (TC-REC-2)")
        errors = self.published_errors.get(key, [])
        if errors and errors[-1] != view.error:
            raise Disagreement(f"call {i} ({key}) was published with the error {errors[-1]!r} "
                               f"but the snapshot shows {view.error!r}")

    def _compare_kept(self, i: int, key: str, c: m.Call, view: ToolCallView) -> None:
        """The policy and deadline the call kept, its approval timer while it waits, and its
        attempt history must be the model's (TC-SNAP-1, D-30, D-32)."""
        setting = self.executor_config.approval_deadline
        found = policy_problem(self.system, self.config, setting, c, view) \
            or history_problem(c, view)
        if found is None and c[m.CS] == m.C_AWAIT:
            found = timer_problem(self.timers, self.timer_clock, self.asked_clock[key], key,
                                  kept_deadline(self.config, setting, c))
        if found is not None:
            raise Disagreement(f"call {i} ({key}) {found}")


def status_of_state(cs: int) -> ToolCallStatus:
    """The status a call in the model's call state `cs` shows in the snapshot."""
    record = m.RECORD_OF_STATE.get(cs)
    if record is not None:
        return ToolCallStatus.of_record(record)
    return ToolCallStatus.AWAITING_APPROVAL if cs == m.C_AWAIT else ToolCallStatus.RUNNING


def reported_counts(snapshot: AgentSnapshot) -> dict[str, int]:
    """How often the session's user messages report each call, by key (D-21)."""
    from atmostonce.spec.reconcile import report_keys_in

    counts: dict[str, int] = {}
    for message in snapshot.messages:
        if message.role is MessageRole.USER:
            for key in report_keys_in(message.text):
                counts[key] = counts.get(key, 0) + 1
    return counts


def _tool_results(snapshot: AgentSnapshot) -> dict[str, list[str]]:
    """Each call's tool results in the session history, by key."""
    results: dict[str, list[str]] = {}
    for message in snapshot.messages:
        if message.role is MessageRole.TOOL:
            key = f"{SESSION}/{message.turn_id}/{message.tool_call_id}"
            results.setdefault(key, []).append(message.tool_output)
    return results


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
                     progress: Callable[[int, int], None] | None = None,
                     stop_at_first: bool = True, edges: bool = False) -> ConformanceResult:
    """Replay every schedule within `depth` (see `schedules`) on a fresh executor each;
    collect disagreements. `progress` hears (schedules replayed, schedules in all) before the
    first and after each one."""
    return replay_list(config, factory, list(schedules(config, depth, edges)), depth, progress,
                       stop_at_first)


def replay_list(config: ModelConfig, factory: p.ExecutorFactory, todo: Sequence[list[Label]],
                depth: int, progress: Callable[[int, int], None] | None = None,
                stop_at_first: bool = True) -> ConformanceResult:
    """Replay the schedules `todo`, in order, on a fresh executor each, as `replay_schedules`
    does; a piece of them gives the part of the whole replay's result it covers."""
    import time

    started = time.monotonic()
    result = ConformanceResult(depth)
    if progress is not None:
        progress(0, len(todo))
    for labels in todo:
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
        if progress is not None:
            progress(result.schedules, len(todo))
    result.seconds = time.monotonic() - started
    return result
