"""The call machines' guards say what the spec's record rule decides, edge by edge."""

from __future__ import annotations

from itertools import product

import pytest

from atmostonce.model.guards import GUARDS, Situation, holds
from atmostonce.model.layout import EFFECT_INDEX, SPEC_END
from atmostonce.model.machines import (
    ALL_MACHINES,
    CALL_SINGLE_ATTEMPT_TOOL,
    CALL_TOOL,
    Edge,
    MachineDef,
)
from atmostonce.model.protocol import decision_table
from atmostonce.spec.policy import EffectClass, ToolPolicy, resolve_policy

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
    """For every way an attempt can end, exactly one edge out of `attempting` has a guard
    that holds, and it is the trigger the model's decision table (the spec's `decide`) fires."""
    table = decision_table()
    more_options = (False, True) if machine is CALL_TOOL else (False,)
    checked = 0
    for effect, (end_kind, end), more, reached in product(
            machine.effects, SPEC_END.items(), more_options, (False, True)):
        situation = Situation(effect, end=end, attempts_left=more, reached_before=reached)
        expected, _ = table[(EFFECT_INDEX[effect], end_kind, more, reached)]
        assert _chosen(machine, "attempting", situation) == [expected], situation
        checked += 1
    assert checked == len(machine.effects) * len(SPEC_END) * len(more_options) * 2


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
