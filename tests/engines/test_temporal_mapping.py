"""The Temporal mapping's rules without Temporal: which activity options each effect class gets,
and which record each way an activity can end gives (by the spec's `records.decide`); and the
checkers' two readings of a server restart, the spec's (D-8: attempts out are lost) and an
engine's whose attempts survive it."""

from __future__ import annotations

import pytest

pytest.importorskip("temporalio")

from atmostonce.check.history import entries as h
from atmostonce.check.history.checkers import History
from atmostonce.engines.adapter import Limits, limits_of
from atmostonce.engines.temporal import RETRY_WRITES, mapping
from atmostonce.engines.temporal.adapter import NOT_CHECKABLE
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import DurableStep, EffectClass, ToolPolicy, resolve_policy
from atmostonce.spec.properties import PROPERTIES, PropertyId
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import (
    DID_NOT_RUN_PREFIX,
    OUTCOME_UNKNOWN_ERROR,
    FailureKind,
    Record,
)
from atmostonce.spec.session import ToolCallStatus

CONFIG = ExecutorConfig(max_attempts=3, retry_backoff=0.2, queue_timeout=10.0, run_timeout=3.0,
                        heartbeat_timeout=2.5, lease=1.0)
E = EffectClass
T = mapping.TimeoutKind


def policy(effect: EffectClass) -> mapping.EffectivePolicy:
    return resolve_policy(ToolPolicy(effect))


@pytest.mark.clause("TC-POL-2", "TC-EFF-READ", "TC-EFF-IDEM", "TC-EFF-NONIDEM", "TC-EFF-UNCL")
@pytest.mark.parametrize(("effect", "attempts"), [
    (E.READ, 3), (E.IDEMPOTENT_WRITE, 3), (E.NON_IDEMPOTENT_WRITE, 1), (E.UNCLASSIFIED, 1)])
def test_call_tool_retries_and_a_single_attempt_tool_gets_maximum_attempts_one(
        effect: EffectClass, attempts: int) -> None:
    plan = mapping.plan(policy(effect), CONFIG)
    assert plan.maximum_attempts == attempts
    assert plan.step is (DurableStep.CALL_TOOL if attempts > 1
                         else DurableStep.CALL_SINGLE_ATTEMPT_TOOL)
    assert (plan.schedule_to_start, plan.start_to_close, plan.heartbeat, plan.retry_interval) \
        == (10.0, 3.0, 2.5, 0.2)


def test_the_broken_variant_retries_every_class() -> None:
    assert mapping.plan(policy(E.NON_IDEMPOTENT_WRITE), CONFIG, RETRY_WRITES) \
        .maximum_attempts == 3


def outcome(effect: EffectClass, ending: mapping.Ending, output: str = "") -> mapping.Outcome:
    p = policy(effect)
    return mapping.outcome(p, mapping.plan(p, CONFIG), ending, output)


@pytest.mark.clause("TC-REC-NOTRUN", "TC-REC-FAIL", "D-5")
@pytest.mark.parametrize("effect", list(EffectClass))
def test_a_schedule_to_start_timeout_without_an_earlier_failure_did_not_run(
        effect: EffectClass) -> None:
    got = outcome(effect, mapping.Ending(timeout=T.SCHEDULE_TO_START, started=False))
    assert got.record is Record.FAILED
    assert got.error.startswith(DID_NOT_RUN_PREFIX)


@pytest.mark.clause("TC-REC-EXHAUST-READ", "TC-REC-EXHAUST-OTHER", "D-5")
def test_a_schedule_to_start_timeout_after_a_failed_attempt_may_have_run() -> None:
    ending = mapping.Ending(timeout=T.SCHEDULE_TO_START, earlier_failure=True, started=False)
    read = outcome(E.READ, ending)
    assert read.record is Record.FAILED
    assert read.failure is FailureKind.MAY_HAVE_RUN
    assert outcome(E.IDEMPOTENT_WRITE, ending).record is Record.OUTCOME_UNKNOWN


@pytest.mark.clause("TC-AMO-3", "D-4", "TC-REC-EXHAUST-OTHER")
def test_a_start_to_close_timeout_is_a_cancel_the_tool_may_outlive() -> None:
    """By default (D-4, as Dex records it) a single attempt's start-to-close timeout leaves the
    write's outcome unknown; a read's last attempt records failed."""
    ending = mapping.Ending(timeout=T.START_TO_CLOSE)
    for effect in (E.NON_IDEMPOTENT_WRITE, E.UNCLASSIFIED, E.IDEMPOTENT_WRITE):
        got = outcome(effect, ending)
        assert got.record is Record.OUTCOME_UNKNOWN
        assert got.error.endswith("(attempt progress NOT_COMPLETED)")
    read = outcome(E.READ, ending)
    assert (read.record, read.failure) == (Record.FAILED, FailureKind.MAY_STILL_BE_RUNNING)


@pytest.mark.clause("TC-AMO-3", "D-4", "F-7")
def test_under_the_failed_choice_a_start_to_close_timeout_records_failed() -> None:
    ending = mapping.Ending(timeout=T.START_TO_CLOSE)
    plan = mapping.plan(policy(E.NON_IDEMPOTENT_WRITE), CONFIG)
    for effect in (E.NON_IDEMPOTENT_WRITE, E.UNCLASSIFIED):
        got = mapping.outcome(policy(effect), plan, ending, "", cancel_records_failed=True)
        assert (got.record, got.failure) == (Record.FAILED, FailureKind.MAY_STILL_BE_RUNNING)


@pytest.mark.clause("TC-REC-LOST", "TC-REC-UNK", "TC-REC-EXHAUST-READ")
def test_a_heartbeat_timeout_or_a_worker_error_is_a_lost_worker() -> None:
    for ending in (mapping.Ending(timeout=T.HEARTBEAT), mapping.Ending()):
        assert mapping.attempt_end(ending) is mapping.AttemptEnd.WORKER_LOST
        unknown = outcome(E.NON_IDEMPOTENT_WRITE, ending)
        assert unknown.record is Record.OUTCOME_UNKNOWN
        assert unknown.error.startswith(OUTCOME_UNKNOWN_ERROR)
        assert outcome(E.READ, ending).failure is FailureKind.MAY_HAVE_RUN


@pytest.mark.clause("D-3", "TC-REC-SUCC")
def test_the_tools_own_failure_is_failed_with_its_text_and_a_return_succeeded() -> None:
    got = outcome(E.IDEMPOTENT_WRITE, mapping.Ending(tool_failed=True), "refund refused")
    assert got.record is Record.FAILED
    assert got.failure is FailureKind.TOOL_ERROR
    assert got.error.endswith("refund refused")
    assert outcome(E.UNCLASSIFIED, mapping.Ending(completed=True)).record is Record.SUCCEEDED


def test_the_engine_declares_only_properties_the_spec_has_each_with_a_reason() -> None:
    assert set(NOT_CHECKABLE) <= set(PROPERTIES)
    assert all(len(why) > 40 for why in NOT_CHECKABLE.values())

    misspelt = PropertyId.A_ONE_WORKER + "S"

    class Declares:
        def limits(self) -> Limits:
            return Limits({misspelt: "?"})

    with pytest.raises(SpecError, match=misspelt):
        limits_of(Declares())
    assert limits_of(object()) == Limits()


def restart_between_hand_out_and_result() -> list[h.Entry]:
    """A single-attempt call handed out, the server restarted, then the tool's own failure
    delivered: an engine that keeps attempts takes it; the spec's D-8 says the attempt was
    lost at the restart."""
    key = "s/t/c"
    return [
        h.PolicySet(0.0, "cancel_order",
                    ToolPolicy(E.NON_IDEMPOTENT_WRITE, requires_approval=False), None),
        h.SessionOpened(0.1, "s", None),
        h.CallAsked(0.2, key, "s", "t", "c", "cancel_order", "{}"),
        h.HandedOut(0.3, "w1", f"{key}#1", key, "cancel_order", True, key),
        h.RunStarted(0.4, 1, "w1", f"{key}#1", key, "cancel_order", key),
        h.ServerRestarted(1.0, 10),
        h.RunEnded(1.5, 1, h.RunEnd.TOOL_FAILED),
        h.ResultDelivered(2.0, "w1", f"{key}#1", False),
        h.RecordPublished(2.1, key, ToolCallStatus.FAILED, "the tool reported a failure"),
    ]


@pytest.mark.clause("D-8")
def test_a_result_across_a_restart_counts_only_where_attempts_survive_restarts() -> None:
    spec = History(CONFIG)
    kept = History(CONFIG, attempts_survive_restart=True)
    for entry in restart_between_hand_out_and_result():
        spec.append(entry)
        kept.append(entry)
    assert [v.property for v in spec.violations] == [PropertyId.A_EXHAUSTED_RECORD,
                                                     PropertyId.A_RECORD_MEANING]
    assert kept.violations == []
