"""The reference executor and the model, in lockstep: every observable step of the executor is
one the model allows, and both agree on records, hand-outs, reports and effects."""

from __future__ import annotations

import pytest
from hypothesis import settings

from atmostonce.check.lockstep.conformance import Lockstep, replay_schedules, schedules
from atmostonce.executor import reference
from atmostonce.model.check import DEFAULT
from atmostonce.model.config import ModelConfig, parse_tools
from atmostonce.model.explorer import Explorer
from atmostonce.model.system import System
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.step_kinds import StepKind
from atmostonce.testing import DEEP, ExecutorMatchesModel

SMALL = DEFAULT.with_(faults=1)


@pytest.mark.slow
@pytest.mark.clause("TC-REC-1", "TC-AMO-1", "TC-KEY-1", "D-5", "D-8", "TC-SNAP-1",
                    "TC-RCN-ONCE", "TC-APR-2")
def test_every_schedule_within_the_depth_agrees_with_the_model() -> None:
    result = replay_schedules(SMALL, reference, depth=9)
    assert result.schedules > 1000
    assert result.disagreements == [], result.disagreements[:1]


def test_edge_schedules_take_every_transition_within_the_depth() -> None:
    depth = 5
    system = System(SMALL)
    explorer = Explorer(system, stop_at_first=False, max_depth=depth)
    explorer.run()
    canonical = system.canonical
    within = set(explorer.states)
    wanted = set()
    for node, state in enumerate(explorer.states):
        if len(explorer.path(node)) <= depth:
            wanted |= {(state, canonical(t.state)) for t in system.successors(state)
                       if canonical(t.state) != state}
    taken = set()
    for labels in schedules(SMALL, depth, edges=True):
        state = system.initial()
        for label in labels:
            before = canonical(state)
            state = next(t.state for t in system.successors(state) if t.label == label)
        taken.add((before, canonical(state)))
    assert taken == wanted
    assert {target for _, target in taken} | {explorer.states[0]} == within


@pytest.mark.slow
@pytest.mark.clause("TC-REC-1", "TC-AMO-1", "D-5", "D-8")
def test_every_transition_within_the_depth_agrees_with_the_model() -> None:
    result = replay_schedules(SMALL, reference, depth=7, edges=True)
    assert result.schedules > 1000
    assert result.disagreements == [], result.disagreements[:1]


@pytest.mark.clause("D-9", "TC-REC-LOST", "TC-AMO-3", "D-4")
@pytest.mark.parametrize(("cancel_records_failed", "record"),
                         [(False, "outcome_unknown"), (True, "failed")])
def test_a_run_timeout_before_the_worker_is_heard_from_cancels_an_attempt_that_reached(
        cancel_records_failed: bool, record: str) -> None:
    """The run timeout counts from the hand-out, so it can fire before `Started` arrives: the
    executor and the model both end the attempt as cancelled after a reach, record what the
    declared choice of D-4 says, and the run's late result changes no record."""
    lock = Lockstep(DEFAULT.with_(cancel_records_failed=cancel_records_failed), reference)

    def take(kind: str) -> None:
        enabled = [label for label in lock.enabled() if label[0] == kind]
        assert enabled, f"the model allows no {kind} after {', '.join(lock.log)}"
        lock.step(enabled[0])

    lock.step((StepKind.ASK, [t.effect for t in DEFAULT.tools].index(
        EffectClass.NON_IDEMPOTENT_WRITE), -1))
    for kind in (StepKind.APPROVE, StepKind.HAND, StepKind.GO, StepKind.TIME_OUT, StepKind.APPLY,
                 StepKind.FINISH_OK):
        take(kind)
    assert "heartbeat(0, 0)" not in lock.log
    assert lock.published == {lock.keys[0]: [record]}


@settings(max_examples=60, stateful_step_count=40)
class ReferenceMatchesModel(ExecutorMatchesModel):
    """The package's deep lockstep (`atmostonce.testing`) on the reference executor."""

    executor = reference


TestReferenceMatchesModel = pytest.mark.clause("TC-REC-1", "TC-AMO-3", "D-4", "D-12")(
    ReferenceMatchesModel.TestCase)


@settings(max_examples=30, stateful_step_count=40)
class ReferenceMatchesModelCancelFails(ExecutorMatchesModel):
    """The same, with the executor and the model under D-4's other choice."""

    executor = reference
    config = DEEP.with_(cancel_records_failed=True)


TestReferenceMatchesModelCancelFails = pytest.mark.clause("D-4", "F-7")(
    ReferenceMatchesModelCancelFails.TestCase)


@pytest.mark.clause("D-22", "D-1")
@pytest.mark.parametrize("lowers", [True, False], ids=["hints-lower", "default-is-a-floor"])
def test_d22_both_choices_agree_with_the_model_on_a_tool_with_a_wrong_read_only_hint(
        lowers: bool) -> None:
    config = ModelConfig(workers=2, calls=1, reasks=0, max_attempts=2, crashes=0,
                         partitions=1, restarts=0, timeouts=1, faults=1, policy_changes=1,
                         reconcile_crashes=0, tools=parse_tools("non_idempotent_write~read"),
                         session_default=EffectClass.NON_IDEMPOTENT_WRITE,
                         hints_may_lower=lowers)
    result = replay_schedules(config, reference, depth=8)
    assert result.schedules > 20
    assert result.disagreements == [], result.disagreements[:1]
    assert result.breaches == [], result.breaches[:1]
