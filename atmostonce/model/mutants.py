"""Deliberately broken models: each turns one protocol decision the wrong way, breaks one
clause, and must be caught by the property named, with a counterexample.

A checker that catches none of these would be broken; `tests/model/test_mutants.py` requires
every one to be caught by exactly the property it names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from atmostonce.model.choices import ModelChoices, decision_table
from atmostonce.model.layout import (
    CALL_SINGLE,
    E_CANCELLED,
    E_LOST,
    E_LOST_RESTART,
    E_NOT_REACHED,
    EFFECT_INDEX,
    FAILURE_INDEX,
    READ_I,
)
from atmostonce.model.tables import with_edge
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.records import FailureKind

SINGLE_EFFECTS = (EffectClass.NON_IDEMPOTENT_WRITE, EffectClass.UNCLASSIFIED)


@dataclass(frozen=True)
class ModelMutant:
    """A broken variant of the model: which clause it breaks and which property must catch it."""

    name: str
    clause: str
    summary: str
    expect: str
    choices: Callable[[], ModelChoices]
    config: Mapping[str, object] = field(default_factory=dict)


def _retry_non_idempotent() -> ModelChoices:
    decisions = decision_table()
    for effect in SINGLE_EFFECTS:
        for end in (E_LOST, E_LOST_RESTART):
            for reached in (False, True):
                for fails in (False, True):
                    decisions[(EFFECT_INDEX[effect], end, True, reached, fails)] = ("retry", 0)
    return ModelChoices(call_single=with_edge(CALL_SINGLE, "retry", "attempting", "attempting"),
                    decisions=decisions, single_max_attempts=2)


def _did_not_run_after_reach() -> ModelChoices:
    decisions = decision_table()
    for effect, end, more, reached, fails in list(decisions):
        if end in (E_LOST, E_LOST_RESTART):
            decisions[(effect, end, more, reached, fails)] = decisions[
                (effect, E_NOT_REACHED, more, reached, fails)]
    return ModelChoices(decisions=decisions)


def _read_unknown() -> ModelChoices:
    decisions = decision_table()
    for situation, (trigger, _) in list(decisions.items()):
        if situation[0] == READ_I and trigger == "may_have_run":
            decisions[situation] = ("unknown", 0)
    return ModelChoices(decisions=decisions)


def _succeed_on_loss() -> ModelChoices:
    decisions = decision_table()
    for situation, (trigger, _) in list(decisions.items()):
        if situation[1] == E_LOST and trigger == "unknown":
            decisions[situation] = ("returned", 0)
    return ModelChoices(decisions=decisions)


def _timeout_as_tool_failure() -> ModelChoices:
    decisions = decision_table()
    tool_error = FAILURE_INDEX[FailureKind.TOOL_ERROR]
    for situation, (trigger, _) in list(decisions.items()):
        if situation[1] == E_CANCELLED and trigger == "retry":
            decisions[situation] = ("tool_failed", tool_error)
    return ModelChoices(decisions=decisions)


def _cancel_under_other_choice(fails: bool) -> Callable[[], ModelChoices]:
    """A cancelled single attempt decided as D-4's other choice would: failed 'may still be
    running' when the executor declares outcome_unknown (`fails` false), outcome_unknown when
    it declares failed."""
    def choices() -> ModelChoices:
        decisions = decision_table()
        for effect in SINGLE_EFFECTS:
            for more in (False, True):
                for reached in (False, True):
                    situation = (EFFECT_INDEX[effect], E_CANCELLED, more, reached, fails)
                    decisions[situation] = decisions[situation[:4] + (not fails,)]
        return ModelChoices(decisions=decisions)
    return choices


MUTANTS: tuple[ModelMutant, ...] = (
    ModelMutant("retry_non_idempotent", "TC-EFF-NONIDEM",
                "a non-idempotent write whose worker was lost gets a second attempt",
                PropertyId.A_ONE_ATTEMPT, _retry_non_idempotent),
    ModelMutant("did_not_run_after_reach", "TC-REC-NOTRUN",
                "an attempt lost after it reached a worker is recorded as never run",
                PropertyId.A_DID_NOT_RUN_TRUE, _did_not_run_after_reach),
    ModelMutant("second_worker", "TC-AMO-1",
                "a lost attempt is handed to another worker instead of being decided",
                PropertyId.A_ONE_WORKER, lambda: ModelChoices(rehand_lost=True)),
    ModelMutant("retry_after_unknown", "TC-REC-EXHAUST-OTHER",
                "a call recorded outcome_unknown is queued for another attempt",
                PropertyId.A_NO_ATTEMPT_AFTER_UNKNOWN,
                lambda: ModelChoices(retry_after_unknown=True)),
    ModelMutant("approval_default_skipped", "TC-APR-2",
                "only an explicit requires_approval=true makes a call wait; the class default "
                "is ignored", PropertyId.A_APPROVAL, lambda: ModelChoices(approval_default=False)),
    ModelMutant("reach_after_go_ahead", "D-5",
                "the journal records the reach only when the first heartbeat arrives, after "
                "the go-ahead", PropertyId.A_DID_NOT_RUN_TRUE,
                lambda: ModelChoices(reach_at_hand=False)),
    ModelMutant("no_self_fence", "D-12",
                "a cut-off worker goes on running its tool after the server declared it lost",
                PropertyId.A_DOUBLE_RUN_SHAPE, lambda: ModelChoices(self_fence=False)),
    ModelMutant("late_result_overwrites", "TC-REC-1",
                "a result arriving after the call was recorded replaces the record",
                PropertyId.A_ONE_RECORD, lambda: ModelChoices(late_result_overwrites=True)),
    ModelMutant("retry_new_key", "TC-KEY-1",
                "a retry passes a different idempotency key", PropertyId.A_SAME_KEY,
                lambda: ModelChoices(retry_key_changes=True)),
    ModelMutant("policy_change_reaches_asked_call", "TC-SNAP-1",
                "a policy change applies to calls asked before it", PropertyId.A_ONE_ATTEMPT,
                lambda: ModelChoices(snapshot_policy=False)),
    ModelMutant("fence_ignored", "D-6",
                "with the fence on, a new call of the tool still starts while the abandoned "
                "run goes on", PropertyId.A_FENCE, lambda: ModelChoices(fence_checked=False),
                {"fence": True}),
    ModelMutant("reconcile_without_history", "TC-RCN-ONCE",
                "the reconcile job sends reports without reading the history first",
                PropertyId.E_RECONCILE_ONCE, lambda: ModelChoices(reconcile_reads_history=False)),
    ModelMutant("read_unknown", "TC-REC-EXHAUST-READ",
                "a read out of attempts after a worker loss records outcome_unknown",
                PropertyId.A_EXHAUSTED_RECORD, _read_unknown),
    ModelMutant("lost_attempt_forgotten", "TC-REC-1",
                "an attempt whose worker was declared lost is never decided, so the call waits "
                "for ever", PropertyId.E_EVERY_CALL_RECORDED,
                lambda: ModelChoices(decide_lost=False)),
    ModelMutant("succeed_on_loss", "TC-REC-SUCC",
                "a call whose worker was lost is recorded succeeded",
                PropertyId.A_SUCCEEDED_RETURNED, _succeed_on_loss),
    ModelMutant("timeout_as_tool_failure", "TC-REC-FAIL",
                "a timed-out attempt of a CallTool call is recorded failed as if the tool had "
                "reported the failure", PropertyId.A_RECORD_MEANING, _timeout_as_tool_failure),
    ModelMutant("history_restart_unreached", "D-30",
                "reconcile's history step reads an attempt lost at a server restart as never "
                "reached, and reports that the tool did not run", PropertyId.A_DID_NOT_RUN_TRUE,
                lambda: ModelChoices(restart_loss_reached=False)),
    ModelMutant("cancel_recorded_failed", "D-4",
                "declaring D-4's default, the executor records a cancelled single attempt "
                "failed, 'may still be running', not outcome_unknown",
                PropertyId.A_EXHAUSTED_RECORD, _cancel_under_other_choice(False)),
    ModelMutant("cancel_recorded_unknown_when_failed_declared", "D-4",
                "declaring D-4's failed choice, the executor records a cancelled single "
                "attempt outcome_unknown", PropertyId.A_EXHAUSTED_RECORD,
                _cancel_under_other_choice(True), {"cancel_records_failed": True}),
)

BY_NAME: Mapping[str, ModelMutant] = {m.name: m for m in MUTANTS}


def get(name: str) -> ModelMutant:
    mutant = BY_NAME.get(name.replace("-", "_"))
    if mutant is None:
        raise SpecError(f"unknown model mutant {name!r} (known: {', '.join(BY_NAME)})")
    return mutant
