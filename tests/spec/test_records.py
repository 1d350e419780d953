"""Records: the page's outcome table, every rule of "which record a failed call gets", and the
decisions that fill the page's gaps, pinned on the spec's classification of attempt histories."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atmostonce.spec.approval import ApprovalEvent, ApprovalState, answer, is_rejection
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, retries_allowed
from atmostonce.spec.records import (
    DID_NOT_RUN_PREFIX,
    OUTCOME_UNKNOWN_ERROR,
    AttemptEnd,
    AttemptProgress,
    Decision,
    FailureKind,
    Record,
    RejectReason,
    classify_attempts,
    decide,
    failure_kind,
    failure_text,
    record_of,
    reject_reason,
    reject_text,
    rejected,
    unknown_detail,
)

READ = EffectClass.READ
IDEM = EffectClass.IDEMPOTENT_WRITE
NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE
UNCL = EffectClass.UNCLASSIFIED
NR = AttemptEnd.NOT_REACHED
RET = AttemptEnd.RETURNED
TF = AttemptEnd.TOOL_FAILED
LOST = AttemptEnd.WORKER_LOST
CAN = AttemptEnd.CANCELLED


def histories(max_attempts: int) -> list[tuple[EffectClass, tuple[AttemptEnd, ...]]]:
    """Every possible complete attempt history of every class, up to `max_attempts`."""
    found = []
    for effect in EffectClass:
        for length in range(1, max_attempts + 1):
            for ends in itertools.product(AttemptEnd, repeat=length):
                try:
                    decision = classify_attempts(effect, ends, max_attempts)
                except SpecError:
                    continue
                if not decision.retry:
                    found.append((effect, ends))
    return found


def reason(effect: EffectClass, ends: tuple[AttemptEnd, ...], decision: Decision) -> str:
    """Why a history ended with its record, in the words of the page's tables."""
    if decision.record is Record.SUCCEEDED:
        return "the tool returned a result"
    if decision.failure is FailureKind.TOOL_ERROR:
        return "the tool reported a failure"
    if decision.failure is FailureKind.DID_NOT_RUN:
        return "the engine knows the tool did not run"
    if decision.record is Record.FAILED and effect is READ:
        return "a read out of attempts after a worker reach"
    if decision.record is Record.FAILED:
        return "a cancelled attempt, the tool may still be running"
    return "the tool may or may not have taken effect"


@pytest.mark.clause("TC-REC-1", "TC-REC-SUCC", "TC-REC-FAIL", "TC-REC-REJ", "TC-REC-UNK", "D-4")
@pytest.mark.parametrize("cancel_records_failed", [False, True])
def test_outcome_table_is_reproduced_by_the_spec(cancel_records_failed: bool) -> None:
    """The page's outcomes table, row by row; a cancelled single attempt records failed only
    under D-4's other choice (F-7), and outcome_unknown by default, as Dex records it."""
    computed: dict[Record, set[str]] = {record: set() for record in Record}
    for effect, ends in histories(3):
        decision = classify_attempts(effect, ends, 3, cancel_records_failed)
        assert decision.record is not None
        computed[decision.record].add(reason(effect, ends, decision))
    for state in ApprovalState:
        for event in (ApprovalEvent.REJECT, ApprovalEvent.DEADLINE):
            after, _ = answer(state, event)
            if state is ApprovalState.WAITING and is_rejection(after):
                computed[Record.REJECTED].add(
                    "a person rejected the call" if event is ApprovalEvent.REJECT
                    else "its approval deadline passed")
    failed = {
        "the tool reported a failure",
        "the engine knows the tool did not run",
        # The list under the table: a read out of attempts records failed.
        "a read out of attempts after a worker reach",
    }
    if cancel_records_failed:
        # D-4's other choice reads the at-most-once section's "records the failure" as the
        # failed record (F-7).
        failed.add("a cancelled attempt, the tool may still be running")
    assert computed == {
        # The outcomes table, one row per record.
        Record.SUCCEEDED: {"the tool returned a result"},
        Record.FAILED: failed,
        Record.REJECTED: {"a person rejected the call", "its approval deadline passed"},
        Record.OUTCOME_UNKNOWN: {"the tool may or may not have taken effect"},
    }


@pytest.mark.clause("TC-REC-NOTRUN", "TC-REC-FAIL")
@pytest.mark.parametrize("effect", list(EffectClass))
def test_every_attempt_unreached_records_failed_safe_to_call_again(effect: EffectClass) -> None:
    max_attempts = 3 if retries_allowed(effect) else 1
    decision = classify_attempts(effect, (NR,) * max_attempts, max_attempts)
    outcome = record_of(decision)
    assert outcome.record is Record.FAILED
    assert outcome.error.startswith(DID_NOT_RUN_PREFIX)


PAGE_DID_NOT_RUN = "the tool did not run, so it is safe to call again"
"""The opening the page gives the error of a call no attempt of which reached a worker, typed
here from the page (Tool call outcomes), not taken from the spec's constant."""
DEX_NOT_RUN_PREFIX = "the tool did not run, so it is safe to call again"
"""Dex's TOOL_CALL_NOT_RUN_ERROR_PREFIX, as its release notes print it (superdurable/dex
agents/v0.2.0, "Tool calls that never ran"): the prefix, then ": ", then the recovery detail."""


@pytest.mark.clause("TC-REC-NOTRUN", "D-10", "D-5")
@pytest.mark.parametrize("effect", list(EffectClass))
def test_the_did_not_run_error_is_the_pages_and_dexs_wording_word_for_word(
        effect: EffectClass) -> None:
    """The error opens with the page's words exactly, which are Dex's prefix exactly, followed
    as in Dex by ': ' and the detail, which names the attempt progress NOT_STARTED."""
    assert PAGE_DID_NOT_RUN == DEX_NOT_RUN_PREFIX
    attempts = 3 if retries_allowed(effect) else 1
    error = record_of(classify_attempts(effect, (NR,) * attempts, attempts)).error
    assert error == (f"{PAGE_DID_NOT_RUN}: no attempt reached a worker "
                     "(attempt progress NOT_STARTED)")
    assert error.split(": ", 1)[0] == DEX_NOT_RUN_PREFIX
    assert DID_NOT_RUN_PREFIX == PAGE_DID_NOT_RUN


@pytest.mark.clause("D-5", "D-30", "D-31")
def test_attempt_progress_has_dexs_three_names_and_unspecified_counts_as_reached() -> None:
    assert [p.value for p in AttemptProgress] == ["NOT_STARTED", "NOT_COMPLETED", "UNSPECIFIED"]
    assert [p.reached_worker for p in AttemptProgress] == [False, True, True]
    assert {end: AttemptProgress.of_end(end) for end in AttemptEnd} == {
        NR: AttemptProgress.NOT_STARTED, LOST: AttemptProgress.NOT_COMPLETED,
        CAN: AttemptProgress.NOT_COMPLETED, RET: None, TF: None}
    for end in (LOST, CAN):
        error = record_of(classify_attempts(NONIDEM, (end,), 1), unknown_detail(end)).error
        assert error.endswith("(attempt progress NOT_COMPLETED)"), error


@pytest.mark.clause("TC-REC-LOST", "TC-REC-RETRY")
@pytest.mark.parametrize("effect", [READ, IDEM])
def test_calltool_tries_again_after_a_worker_loss(effect: EffectClass) -> None:
    assert classify_attempts(effect, (LOST,), 3).retry
    assert classify_attempts(effect, (LOST, NR), 3).retry


@pytest.mark.clause("TC-REC-EXHAUST-READ", "TC-REC-LOST")
def test_read_out_of_attempts_after_a_loss_records_failed_without_safe_wording() -> None:
    outcome = record_of(classify_attempts(READ, (LOST, NR, NR), 3))
    assert outcome.record is Record.FAILED
    assert not outcome.error.startswith(DID_NOT_RUN_PREFIX)


@pytest.mark.clause("TC-REC-EXHAUST-OTHER", "TC-RCN-1", "TC-AMO-2")
@pytest.mark.parametrize(("effect", "ends", "max_attempts"), [
    (IDEM, (LOST, LOST), 2),
    (IDEM, (NR, LOST, NR), 3),
    (NONIDEM, (LOST,), 1),
    (UNCL, (LOST,), 1),
])
def test_other_classes_out_of_attempts_after_a_reach_are_unknown_and_final(
    effect: EffectClass, ends: tuple[AttemptEnd, ...], max_attempts: int
) -> None:
    decision = classify_attempts(effect, ends, max_attempts)
    assert (decision.record, decision.retry) == (Record.OUTCOME_UNKNOWN, False)
    assert record_of(decision).error == OUTCOME_UNKNOWN_ERROR
    with pytest.raises(SpecError, match="already decided"):
        classify_attempts(effect, (*ends, RET), max_attempts)


@pytest.mark.clause("TC-EFF-NONIDEM", "TC-EFF-UNCL", "TC-AMO-1", "D-10")
@pytest.mark.parametrize("effect", [NONIDEM, UNCL])
@pytest.mark.parametrize("end", list(AttemptEnd))
def test_single_attempt_classes_never_get_a_second_attempt(
    effect: EffectClass, end: AttemptEnd
) -> None:
    assert not decide(effect, end, 1, 5, False).retry


@pytest.mark.clause("TC-AMO-3", "D-4", "TC-REC-EXHAUST-OTHER")
@pytest.mark.parametrize("effect", [NONIDEM, UNCL])
def test_cancelled_single_attempt_records_outcome_unknown_by_default(
    effect: EffectClass,
) -> None:
    """D-4 as Dex has it: an attempt that reached a worker and ended without a result leaves
    a write's outcome unknown, and the call is never run again."""
    decision = classify_attempts(effect, (CAN,), 1)
    assert (decision.record, decision.retry) == (Record.OUTCOME_UNKNOWN, False)
    outcome = record_of(decision)
    assert outcome.error.startswith(OUTCOME_UNKNOWN_ERROR)
    assert DID_NOT_RUN_PREFIX not in outcome.error


@pytest.mark.clause("TC-AMO-3", "D-4", "F-7")
@pytest.mark.parametrize("effect", [NONIDEM, UNCL])
def test_cancelled_single_attempt_records_failed_under_the_other_choice(
    effect: EffectClass,
) -> None:
    outcome = record_of(classify_attempts(effect, (CAN,), 1, cancel_records_failed=True))
    assert outcome.record is Record.FAILED
    assert "may still be running" in outcome.error
    assert DID_NOT_RUN_PREFIX not in outcome.error


@pytest.mark.clause("D-4", "TC-REC-EXHAUST-READ")
@pytest.mark.parametrize("cancel_records_failed", [False, True])
def test_the_choice_of_d4_changes_nothing_but_the_cancelled_single_attempt(
    cancel_records_failed: bool,
) -> None:
    """Both choices agree on every history but a cancelled single attempt's."""
    for effect, ends in histories(3):
        single = not retries_allowed(effect)
        if single and ends[-1] is CAN:
            continue
        assert classify_attempts(effect, ends, 3, cancel_records_failed) == \
            classify_attempts(effect, ends, 3, not cancel_records_failed)


@pytest.mark.clause("D-3")
@pytest.mark.parametrize("effect", list(EffectClass))
def test_a_failure_the_tool_reports_is_final_and_reaches_the_model(effect: EffectClass) -> None:
    decision = classify_attempts(effect, (TF,), 3)
    assert (decision.record, decision.failure) == (Record.FAILED, FailureKind.TOOL_ERROR)
    assert "card declined" in record_of(decision, "card declined").error


@pytest.mark.clause("D-9")
def test_timed_out_calltool_attempt_retries_then_counts_as_a_reach() -> None:
    assert classify_attempts(IDEM, (CAN,), 2).retry
    assert classify_attempts(IDEM, (CAN, CAN), 2).record is Record.OUTCOME_UNKNOWN
    assert classify_attempts(READ, (CAN, NR), 2).record is Record.FAILED


@pytest.mark.clause("TC-REC-SUCC", "TC-REC-1")
@given(st.sampled_from(EffectClass), st.lists(st.sampled_from(AttemptEnd), min_size=1,
                                              max_size=5), st.integers(1, 5))
def test_classification_invariants(
    effect: EffectClass, ends: list[AttemptEnd], max_attempts: int
) -> None:
    try:
        decision = classify_attempts(effect, ends, max_attempts)
    except SpecError:
        return
    reached = any(end.reached_worker for end in ends)
    assert decision.retry == (decision.record is None)
    assert (decision.record is Record.SUCCEEDED) == (ends[-1] is RET)
    if decision.failure is FailureKind.DID_NOT_RUN:
        assert not reached
    if decision.record is Record.OUTCOME_UNKNOWN:
        assert reached
        assert effect is not READ
    if len(ends) > 1:
        assert retries_allowed(effect)
    if not decision.retry:
        text = record_of(decision).error
        assert text.startswith(DID_NOT_RUN_PREFIX) == (decision.failure is FailureKind.DID_NOT_RUN)


@pytest.mark.clause("TC-REC-REJ")
def test_rejections_record_rejected_with_their_reason() -> None:
    assert rejected(RejectReason.PERSON).record is Record.REJECTED
    assert "deadline" in rejected(RejectReason.DEADLINE).error


@pytest.mark.parametrize(("call", "message"), [
    (lambda: classify_attempts(READ, (), 3), "at least one attempt"),
    (lambda: classify_attempts(READ, (NR,), 0), "max_attempts must be a whole number >= 1"),
    (lambda: classify_attempts(READ, (RET, RET), 3), "attempt 2 cannot exist"),
    (lambda: classify_attempts(READ, ("lost",), 3), "is not an AttemptEnd"),  # type: ignore[arg-type]
    (lambda: classify_attempts("write", (NR,), 3), "unknown effect class 'write'"),  # type: ignore[arg-type]
    (lambda: Record.parse("ok"), "unknown record 'ok'"),
])
def test_impossible_histories_are_rejected(call: Callable[[], object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        call()


@pytest.mark.parametrize("kind", list(FailureKind))
def test_a_failed_records_error_names_its_own_failure_kind(kind: FailureKind) -> None:
    """Statistics split failed records by the text their error opens with: each kind's text,
    with or without its detail, names that kind and no other."""
    assert failure_kind(failure_text(kind)) is kind
    assert failure_kind(failure_text(kind, "its worker stopped")) is kind


def test_a_did_not_run_error_is_named_by_its_prefix_alone() -> None:
    assert failure_kind(f"{DID_NOT_RUN_PREFIX}: the queue timed out") is FailureKind.DID_NOT_RUN


@pytest.mark.parametrize("error", ["", "boom", OUTCOME_UNKNOWN_ERROR,
                                   reject_text(RejectReason.PERSON),
                                   f"card declined: {failure_text(FailureKind.TOOL_ERROR)}"])
def test_an_error_that_opens_with_no_failed_text_names_no_kind(error: str) -> None:
    assert failure_kind(error) is None


@pytest.mark.parametrize("reason", list(RejectReason))
def test_a_rejected_records_error_names_its_own_reason(reason: RejectReason) -> None:
    assert reject_reason(reject_text(reason)) is reason
    assert reject_reason(rejected(reason).error) is reason
    assert reject_reason(failure_text(FailureKind.TOOL_ERROR)) is None

