"""The machines' guards say what the model decides, edge by edge: the call machines' what the
spec's record rule decides, the attempt's what the explored model does."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from itertools import product

import pytest

from atmostonce.model import layout
from atmostonce.model.choices import decision_table
from atmostonce.model.config import ModelConfig, parse_tools
from atmostonce.model.guards import GUARDS, Situation, holds
from atmostonce.model.layout import EFFECT_INDEX, SPEC_END, Label, State
from atmostonce.model.machines import (
    ALL_MACHINES,
    ATTEMPT,
    CALL_SINGLE_ATTEMPT_TOOL,
    CALL_TOOL,
    Edge,
    MachineDef,
)
from atmostonce.model.system import System
from atmostonce.spec.policy import EffectClass, ToolPolicy, resolve_policy
from atmostonce.spec.step_kinds import StepKind

CALLS = (CALL_TOOL, CALL_SINGLE_ATTEMPT_TOOL)


def _out_of(machine: MachineDef, state: str) -> list[Edge]:
    return [e for e in machine.edges if state in e.sources]


def _chosen(machine: MachineDef, state: str, situation: Situation) -> list[str]:
    return [e.trigger for e in _out_of(machine, state)
            if holds(e.conditions, e.unless, situation)]


def test_every_guard_named_in_a_definition_exists() -> None:
    for machine in ALL_MACHINES:
        for edge in machine.edges:
            for name in (*edge.conditions, *edge.unless):
                assert name in GUARDS, f"{machine.name}.{edge.trigger} names guard {name}"


@pytest.mark.clause("TC-EFF-READ", "TC-EFF-IDEM", "TC-EFF-NONIDEM", "TC-EFF-UNCL")
def test_each_effect_class_has_exactly_one_call_machine() -> None:
    for effect in EffectClass:
        owners = [m.name for m in CALLS if effect in m.effects]
        single = not resolve_policy(ToolPolicy(effect)).retries_allowed
        assert owners == ["CallSingleAttemptTool" if single else "CallTool"], effect


@pytest.mark.parametrize("machine", CALLS, ids=lambda m: m.name)
@pytest.mark.clause("TC-REC-RETRY", "TC-REC-EXHAUST-READ", "TC-REC-EXHAUST-OTHER", "D-3", "D-4")
def test_guards_pick_the_edge_the_record_rule_picks(machine: MachineDef) -> None:
    """For every way an attempt can end, under either choice of D-4, exactly one edge out of
    `attempting` has a guard that holds, and it is the trigger the model's decision table (the
    spec's `decide`) fires."""
    table = decision_table()
    more_options = (False, True) if machine is CALL_TOOL else (False,)
    checked = 0
    for effect, (end_kind, end), more, reached, fails in product(
            machine.effects, SPEC_END.items(), more_options, (False, True), (False, True)):
        situation = Situation(effect, end=end, attempts_left=more, reached_before=reached,
                              cancel_records_failed=fails)
        expected, _ = table[(EFFECT_INDEX[effect], end_kind, more, reached, fails)]
        assert _chosen(machine, "attempting", situation) == [expected], situation
        checked += 1
    assert checked == len(machine.effects) * len(SPEC_END) * len(more_options) * 4


@pytest.mark.parametrize("machine", CALLS, ids=lambda m: m.name)
@pytest.mark.clause("TC-APR-2", "TC-APR-3")
def test_approval_guard_splits_the_ask(machine: MachineDef) -> None:
    for effect, approval in product(machine.effects, (None, True, False)):
        policy = resolve_policy(ToolPolicy(effect, approval))
        situation = Situation(effect, requires_approval=policy.requires_approval)
        expected = "needs_approval" if policy.requires_approval else "start"
        assert _chosen(machine, "asked", situation) == [expected]


def test_a_wrong_guard_is_caught() -> None:
    """The check above fails when a guard is wrong: here a retry that ignores attempts left."""
    broken = tuple(Edge(e.trigger, e.sources, e.dest, ("infra_failure",), ())
                   if e.trigger == "retry" else e for e in CALL_TOOL.edges)
    machine = MachineDef("Broken", "", CALL_TOOL.states, broken, CALL_TOOL.effects)
    situation = Situation(EffectClass.READ, end=SPEC_END[1], attempts_left=False)
    assert len(_chosen(machine, "attempting", situation)) == 2


def _attempt_situation(system: System, state: State, call: int, worker: int) -> Situation:
    """The attempt guards' view of `call` and `worker`, read from the model's public state."""
    calls = system.calls_of(state)
    c = calls[call]
    busy = any((o[layout.AW] == worker and o[layout.AS] == layout.A_HANDED)
               or any(run[0] == worker for run in system.runs(o[layout.RUNS]))
               for o in calls)
    single = system.single[c[layout.T]][c[layout.POL]]
    fenced = system.config.fence and single and any(
        o[layout.T] == c[layout.T] and o[layout.ABW] >= 0 for o in calls)
    ws = state[layout.NG + worker]
    return Situation(system.config.tools[c[layout.T]].effect,
                     worker=layout.WORKER.states[ws], worker_busy=busy, fenced=fenced)


def _explored(config: ModelConfig) -> Iterator[tuple[System, State, list[Label]]]:
    system = System(config)
    start = system.initial()
    seen, queue = {system.canonical(start)}, deque([start])
    while queue:
        state = queue.popleft()
        succs = system.successors(state)
        yield system, state, [t.label for t in succs]
        for t in succs:
            canonical = system.canonical(t.state)
            if canonical not in seen:
                seen.add(canonical)
                queue.append(t.state)


ATTEMPT_BOUND = ModelConfig(workers=2, calls=2, reasks=0, crashes=1, partitions=1, restarts=0,
                            timeouts=1, faults=1, policy_changes=0, reconcile_crashes=0,
                            tools=parse_tools("non_idempotent_write-approval,read"), fence=True)


def _guarded(trigger: str) -> Edge:
    return next(e for e in ATTEMPT.edges if e.trigger == trigger)


def _check_attempt_guards(hand: Edge, go: Edge, beat: Edge) -> None:
    seen = {"hand": 0, "refused": 0, "go": 0, "heartbeat": 0, "fenced": 0}
    for system, state, labels in _explored(ATTEMPT_BOUND):
        for i, c in enumerate(system.calls_of(state)):
            if c[layout.CS] != layout.C_ATTEMPTING:
                continue
            if c[layout.AS] == layout.A_QUEUED:
                admitted = {w for w in range(system.workers) if holds(
                    hand.conditions, hand.unless, _attempt_situation(system, state, i, w))}
                handed = {w for kind, call, w in labels if kind == StepKind.HAND and call == i}
                assert handed <= admitted, (state, i)
                assert bool(handed) == bool(admitted), (state, i)
                seen["hand" if handed else "refused"] += 1
                seen["fenced"] += any(_attempt_situation(system, state, i, w).fenced
                                      for w in range(system.workers))
            for edge, source in ((go, layout.A_HANDED), (beat, layout.A_STARTED)):
                if c[layout.AS] == source:
                    s = _attempt_situation(system, state, i, c[layout.AW])
                    taken = (edge.trigger, i, c[layout.AW]) in labels
                    assert taken == holds(edge.conditions, edge.unless, s), (state, i)
                    seen[edge.trigger] += taken
    assert all(seen.values()), seen  # every case happened, so the check means something


@pytest.mark.clause("D-5", "D-6")
def test_attempt_guards_hold_exactly_where_the_model_takes_the_edge() -> None:
    """Over every reachable state: a hand-out goes only to a worker its guard admits, and some
    worker gets it whenever the guard admits one (idle workers are interchangeable, so the
    model offers it to one of them); go and heartbeat happen exactly when their guard holds."""
    _check_attempt_guards(_guarded("hand"), _guarded("go"), _guarded("heartbeat"))


@pytest.mark.parametrize("dropped", ["worker_up", "worker_busy", "fenced"])
def test_a_hand_out_guard_missing_a_condition_is_caught(dropped: str) -> None:
    hand = _guarded("hand")
    broken = Edge(hand.trigger, hand.sources, hand.dest,
                  tuple(c for c in hand.conditions if c != dropped),
                  tuple(u for u in hand.unless if u != dropped))
    with pytest.raises(AssertionError):
        _check_attempt_guards(broken, _guarded("go"), _guarded("heartbeat"))
