"""Every history checker can fail: for each always- and eventually-property a small hand-made
history breaks it and the checker names it; clean histories of the same shapes pass."""

from __future__ import annotations

import sys

import pytest

from atmostonce.check.history import entries as h
from atmostonce.check.history.checkers import History
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.properties import Kind, PropertyId, of_kind
from atmostonce.spec.protocol import ExecutorConfig, TimerKind
from atmostonce.spec.records import (
    OUTCOME_UNKNOWN_ERROR,
    AttemptEnd,
    AttemptProgress,
    RejectReason,
    reject_text,
    unknown_detail,
)
from atmostonce.spec.session import AttemptView, ToolCallView
from tests.check.history.story import (
    DID_NOT_RUN,
    IDEM,
    MAY_HAVE_RUN,
    MAY_STILL_RUN,
    NONIDEM,
    READ,
    TOOL_ERROR,
    UNKNOWN,
    UNKNOWN_CANCELLED,
    S,
    Story,
)

ACCEPTED = REPLY_TEXT[ApprovalReply.ACCEPTED]


def clean() -> Story:
    """A run with every kind of call ending well: a read, an approved write lost with its
    worker and reconciled once, a rejection, an unreached single attempt, a retried read."""
    s = Story()
    s.policy("search", READ)
    s.policy("cancel", NONIDEM)
    s.policy("send", NONIDEM, False)
    s.session()
    s.succeeds("search", "c1")
    key = s.ask("cancel", "c2")
    s.waits(key)
    s.answer(key, True, True, ACCEPTED)
    s.queued(key, "a2")
    s.hand(key, "a2", "w2", "cancel")
    run = s.run(key, "a2", "w2", "cancel")
    s.apply(run, key)
    s.end(run, h.RunEnd.STOPPED)
    s.lost("w2")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    s.report(key)
    rejected = s.ask("cancel", "c3")
    s.waits(rejected)
    s.answer(rejected, False, True, ACCEPTED)
    s.publish(rejected, S.REJECTED, "rejected: a person rejected the call")
    s.answer(rejected, True, False, REPLY_TEXT[ApprovalReply.ALREADY_REJECTED])
    unreached = s.ask("send", "c4")
    s.queued(unreached, "a4")
    s.publish(unreached, S.FAILED, DID_NOT_RUN)
    retried = s.ask("search", "c5")
    s.queued(retried, "a5")
    s.hand(retried, "a5", "w3", "search")
    s.lost("w3")
    s.queued(retried, "a6")
    s.hand(retried, "a6", "w1", "search")
    run = s.run(retried, "a6", "w1", "search")
    s.end(run)
    s.result("w1", "a6", True)
    s.publish(retried, S.SUCCEEDED)
    for k, status, error in ((key, S.OUTCOME_UNKNOWN, UNKNOWN), (unreached, S.FAILED,
                                                                  DID_NOT_RUN)):
        s.snapshot(k, status, error)
    return s


def test_a_clean_history_passes_every_checker() -> None:
    s = clean()
    assert s.check() == []


def test_every_always_and_eventually_property_has_a_test_that_breaks_it() -> None:
    module = sys.modules[__name__]
    for prop in (*of_kind(Kind.ALWAYS), *of_kind(Kind.EVENTUALLY)):
        name = "test_" + prop.id.lower().replace("-", "_")
        assert any(attr.startswith(name) for attr in dir(module)), f"no test breaks {prop.id}"


def test_the_incremental_history_and_check_history_agree_and_name_positions() -> None:
    s = clean()
    key = s.ask("search", "c9")
    s.queued(key, "a9")
    at = s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    history = History(s.config)
    online = [v for e in s.entries for v in history.append(e)]
    assert online == history.violations
    assert [v.property for v in online] == [PropertyId.A_UNKNOWN_REACHED]
    assert at in online[0].positions
    assert "A-UNKNOWN-REACHED [s/t1/c9]" in online[0].line()
    at_end = history.finish()
    assert [v.property for v in at_end] == [PropertyId.E_RECONCILE_ONCE]
    assert s.check() == online + at_end


# -- always-properties --------------------------------------------------------------------------


@pytest.mark.clause("TC-AMO-1")
def test_a_one_worker_catches_an_attempt_handed_to_a_second_worker() -> None:
    s = Story()
    s.policy("cancel", NONIDEM, False)
    s.session()
    key = s.ask("cancel", "c1")
    s.hand(key, "a1", "w1", "cancel")
    s.lost("w1")
    s.hand(key, "a1", "w2", "cancel")
    assert PropertyId.A_ONE_WORKER in s.properties()


@pytest.mark.clause("TC-AMO-1")
def test_a_one_worker_catches_one_attempt_running_at_two_workers_in_the_ledger() -> None:
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    s.hand(key, "a1", "w1", "search")
    s.run(key, "a1", "w1", "search")
    s.run(key, "a1", "w2", "search")
    assert PropertyId.A_ONE_WORKER in s.properties()


@pytest.mark.clause("TC-EFF-NONIDEM", "TC-EFF-UNCL", "TC-APR-4", "TC-AMO-1")
def test_a_one_attempt_catches_a_second_attempt_of_a_single_attempt_call() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.queued(key, "a1")
    s.queued(key, "a2")
    assert {PropertyId.A_ONE_ATTEMPT, PropertyId.A_RETRY_CLASSES} <= s.properties()


@pytest.mark.clause("TC-REC-RETRY", "TC-REC-EXHAUST-READ", "D-9")
def test_a_exhausted_record_catches_an_attempt_beyond_max_attempts() -> None:
    """A read tried again after each loss of its worker, once more than max_attempts allow."""
    s = Story(ExecutorConfig(max_attempts=2))
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    for n in (1, 2):
        s.hand(key, f"a{n}", f"w{n}", "search")
        s.lost(f"w{n}")
    assert PropertyId.A_EXHAUSTED_RECORD not in s.properties()
    s.hand(key, "a3", "w3", "search")
    found = [v for v in s.check() if v.property == PropertyId.A_EXHAUSTED_RECORD]
    assert [v.message for v in found] == ["a read call got 3 attempts, more than its 2"]


@pytest.mark.clause("TC-REC-RETRY", "D-9", "TC-EFF-NONIDEM")
@pytest.mark.parametrize(("effect", "number", "caught"), [
    (READ, 2, None), (READ, 3, PropertyId.A_EXHAUSTED_RECORD),
    (NONIDEM, 2, PropertyId.A_ONE_ATTEMPT)])
def test_an_attempt_number_the_engine_gives_bounds_the_attempts_made(
        effect: EffectClass, number: int, caught: str | None) -> None:
    """Temporal's history keeps only the last attempt's start, with its number: attempt 3
    handed out proves three attempts though the first two left no trace."""
    s = Story(ExecutorConfig(max_attempts=2))
    s.policy("tool", effect, False)
    s.session()
    key = s.ask("tool", "c1")
    s.add(h.HandedOut(s.now(), "w1", f"{key}#{number}", key, "tool", True, key, True, number))
    found = [v.message for v in s.check() if v.property == caught]
    limit = 1 if effect is NONIDEM else 2
    assert found == ([] if caught is None else [
        f"{'a read' if effect is READ else 'a non_idempotent_write'} call's attempt number "
        f"{number} was handed out, more than its {limit}"])
    assert (caught is None) == (s.properties() <= {PropertyId.E_EVERY_CALL_RECORDED})


def test_a_second_attempt_names_the_first_attempt_its_run_and_its_loss() -> None:
    """The excerpt of A-ONE-ATTEMPT shows what came before the second attempt: the first
    attempt's hand-out, its run in the ledger and the loss of its worker."""
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    asked = len(s.entries) - 1
    first = s.hand(key, "a1", "w1", "send")
    s.run(key, "a1", "w1", "send")
    ran = len(s.entries) - 1
    s.lost("w1")
    lost = len(s.entries) - 1
    second = s.hand(key, "a2", "w2", "send")
    [violation] = [v for v in s.check() if v.property == PropertyId.A_ONE_ATTEMPT]
    assert violation.positions == (asked, first, ran, lost, second)


@pytest.mark.clause("TC-REC-EXHAUST-OTHER", "TC-AMO-2", "TC-RCN-1")
def test_a_no_attempt_after_unknown_catches_a_hand_out_after_the_record() -> None:
    s = Story()
    s.policy("update", IDEM)
    s.session()
    key = s.ask("update", "c1")
    s.hand(key, "a1", "w1", "update")
    s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    s.queued(key, "a2")
    s.hand(key, "a2", "w2", "update")
    s.run(key, "a2", "w2", "update")
    assert PropertyId.A_NO_ATTEMPT_AFTER_UNKNOWN in s.properties()


@pytest.mark.clause("TC-REC-1")
def test_a_one_record_catches_a_record_that_changes() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    s.timed_out(key, "a1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    s.publish(key, S.SUCCEEDED)
    assert PropertyId.A_ONE_RECORD in s.properties()


@pytest.mark.clause("TC-REC-1")
def test_a_one_record_catches_a_snapshot_that_disagrees_or_a_second_event() -> None:
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.succeeds("search", "c1")
    s.snapshot(key, S.FAILED, "the tool reported a failure")
    other = s.succeeds("search", "c2")
    s.publish(other, S.SUCCEEDED)
    messages = [v.message for v in s.check() if v.property == PropertyId.A_ONE_RECORD]
    assert any("the snapshot shows failed" in m for m in messages)
    assert any("published twice" in m for m in messages)


def test_a_one_record_allows_a_record_published_again_after_a_restart() -> None:
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.succeeds("search", "c1")
    s.restart()
    s.publish(key, S.SUCCEEDED)
    s.snapshot(key, S.SUCCEEDED)
    assert s.check() == []


@pytest.mark.clause("TC-REC-NOTRUN", "TC-REC-FAIL", "D-5")
def test_a_did_not_run_true_catches_the_wording_after_a_run() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    run = s.run(key, "a1", "w1", "send")
    s.end(run, h.RunEnd.KILLED)
    s.lost("w1")
    s.publish(key, S.FAILED, DID_NOT_RUN)
    assert PropertyId.A_DID_NOT_RUN_TRUE in s.properties()


@pytest.mark.clause("D-30", "D-31", "TC-RCN-HISTORY")
def test_a_did_not_run_true_catches_a_history_that_hides_a_hand_out() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    s.snapshot(key, S.OUTCOME_UNKNOWN, UNKNOWN, unreached=True)
    assert PropertyId.A_DID_NOT_RUN_TRUE in s.properties()


@pytest.mark.clause("D-30", "TC-RCN-HISTORY", "TC-REC-NOTRUN")
def test_a_history_with_no_reach_holds_until_a_run_of_the_call_shows_up() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.queued(key, "a1")
    s.publish(key, S.FAILED, DID_NOT_RUN)
    s.snapshot(key, S.FAILED, DID_NOT_RUN, unreached=True)
    assert s.check() == []
    s.run(key, "a1", "w1", "send")
    assert PropertyId.A_DID_NOT_RUN_TRUE in s.properties()


@pytest.mark.clause("D-5")
def test_a_did_not_run_true_catches_a_go_ahead_sent_before_the_hand_out_was_persisted() -> None:
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    s.hand(key, "a1", "w1", "search", persisted=False)
    assert PropertyId.A_DID_NOT_RUN_TRUE in s.properties()


@pytest.mark.clause("TC-REC-SUCC")
def test_a_succeeded_returned_catches_succeeded_without_a_returned_run() -> None:
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    s.hand(key, "a1", "w1", "search")
    run = s.run(key, "a1", "w1", "search")
    s.end(run, h.RunEnd.KILLED)
    s.publish(key, S.SUCCEEDED)
    assert PropertyId.A_SUCCEEDED_RETURNED in s.properties()


@pytest.mark.clause("TC-REC-UNK", "TC-REC-LOST", "D-5")
def test_a_unknown_reached_catches_unknown_for_an_attempt_never_handed_out() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.queued(key, "a1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    assert PropertyId.A_UNKNOWN_REACHED in s.properties()


@pytest.mark.clause("TC-REC-EXHAUST-READ", "TC-REC-EXHAUST-OTHER", "D-9")
def test_a_exhausted_record_catches_a_read_recorded_outcome_unknown() -> None:
    s = Story(ExecutorConfig(max_attempts=1))
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    s.queued(key, "a1")
    s.hand(key, "a1", "w1", "search")
    s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    assert PropertyId.A_EXHAUSTED_RECORD in s.properties()


@pytest.mark.clause("TC-REC-EXHAUST-OTHER", "TC-AMO-2")
def test_a_exhausted_record_catches_a_lost_single_attempt_recorded_failed() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    s.lost("w1")
    s.publish(key, S.FAILED, MAY_HAVE_RUN)
    assert PropertyId.A_EXHAUSTED_RECORD in s.properties()


@pytest.mark.clause("TC-REC-RETRY", "D-9")
def test_a_exhausted_record_catches_a_retrying_call_that_gives_up_early() -> None:
    s = Story()
    s.policy("update", IDEM)
    s.session()
    key = s.ask("update", "c1")
    s.queued(key, "a1")
    s.hand(key, "a1", "w1", "update")
    s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    messages = [v.message for v in s.check() if v.property == PropertyId.A_EXHAUSTED_RECORD]
    assert messages
    assert "after 1 of its 3 attempts" in messages[0]


@pytest.mark.clause("TC-REC-FAIL", "D-3")
def test_a_record_meaning_catches_a_timed_out_attempt_recorded_as_the_tools_failure() -> None:
    s = Story()
    s.policy("update", IDEM)
    s.session()
    key = s.ask("update", "c1")
    s.hand(key, "a1", "w1", "update")
    s.timed_out(key, "a1")
    s.publish(key, S.FAILED, TOOL_ERROR)
    messages = [v.message for v in s.check() if v.property == PropertyId.A_RECORD_MEANING]
    assert messages
    assert "no run of the tool reported one" in messages[0]


@pytest.mark.clause("TC-REC-FAIL", "TC-REC-UNK")
def test_a_record_meaning_catches_a_lost_idempotent_write_recorded_failed() -> None:
    s = Story(ExecutorConfig(max_attempts=1))
    s.policy("update", IDEM)
    s.session()
    key = s.ask("update", "c1")
    s.hand(key, "a1", "w1", "update")
    s.lost("w1")
    s.publish(key, S.FAILED, MAY_HAVE_RUN)
    assert PropertyId.A_RECORD_MEANING in s.properties()


def _cancelled_single_attempt(config: ExecutorConfig, status: S, error: str) -> Story:
    """A single-attempt send timed out and cancelled at its worker, recorded `status`, whose
    write lands after the record; and a read lost with its worker, recorded failed."""
    s = Story(config)
    s.policy("send", NONIDEM, False)
    s.policy("search", READ)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    run = s.run(key, "a1", "w1", "send")
    s.timed_out(key, "a1")
    s.cancel("w1", "a1")
    s.publish(key, status, error)
    s.apply(run, key)
    s.end(run)
    read = s.ask("search", "c2")
    s.hand(read, "a2", "w2", "search")
    s.lost("w2")
    s.publish(read, S.FAILED, MAY_HAVE_RUN)
    return s


@pytest.mark.clause("D-4", "TC-REC-EXHAUST-OTHER", "TC-REC-UNK", "TC-AMO-3")
def test_by_default_a_cancelled_single_attempt_records_outcome_unknown() -> None:
    """D-4 as Dex has it: the cancelled write is outcome_unknown, and its late write and its
    run going on after the record are the documented shape."""
    s = _cancelled_single_attempt(ExecutorConfig(max_attempts=1), S.OUTCOME_UNKNOWN,
                                  UNKNOWN_CANCELLED)
    assert s.properties() == {PropertyId.E_RECONCILE_ONCE}  # not reconciled yet
    s.report("s/t1/c1")
    assert s.properties() == set()


@pytest.mark.clause("D-4", "TC-REC-FAIL", "TC-REC-EXHAUST-OTHER")
def test_by_default_a_cancelled_single_attempt_recorded_failed_is_caught() -> None:
    """An engine declaring D-4's default that records the cancelled write failed breaks the
    record's meaning and the exhausted-attempts rule."""
    s = _cancelled_single_attempt(ExecutorConfig(max_attempts=1), S.FAILED, MAY_STILL_RUN)
    assert {PropertyId.A_RECORD_MEANING, PropertyId.A_EXHAUSTED_RECORD} <= s.properties()
    assert any("declares D-4's default" in v.message for v in s.check()
               if v.property == PropertyId.A_RECORD_MEANING)


@pytest.mark.clause("F-7", "D-4", "TC-REC-FAIL", "TC-REC-EXHAUST-READ")
def test_a_record_meaning_excepts_the_cancelled_single_attempt_under_the_failed_choice(
        ) -> None:
    s = _cancelled_single_attempt(ExecutorConfig(max_attempts=1, cancel_records_failed=True),
                                  S.FAILED, MAY_STILL_RUN)
    assert PropertyId.A_RECORD_MEANING not in s.properties()
    assert s.properties() == set()


@pytest.mark.clause("F-7", "D-4", "TC-REC-EXHAUST-OTHER")
def test_under_the_failed_choice_a_cancelled_single_attempt_recorded_unknown_is_caught(
        ) -> None:
    s = _cancelled_single_attempt(ExecutorConfig(max_attempts=1, cancel_records_failed=True),
                                  S.OUTCOME_UNKNOWN, UNKNOWN)
    assert PropertyId.A_EXHAUSTED_RECORD in s.properties()


@pytest.mark.clause("F-7", "D-4")
def test_under_the_failed_choice_a_cancelled_single_attempt_must_say_it_may_still_run() -> None:
    s = _cancelled_single_attempt(ExecutorConfig(max_attempts=1, cancel_records_failed=True),
                                  S.FAILED, MAY_HAVE_RUN)
    assert any("may still be running" in v.message for v in s.check()
               if v.property == PropertyId.A_RECORD_MEANING)


def _never_reached(error: str) -> Story:
    """A call whose only attempt timed out in the queue, recorded failed with `error` in its
    event, its snapshot and its tool result alike: no copy disagrees with another."""
    s = Story(ExecutorConfig(max_attempts=1))
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.queued(key, "a1")
    s.add(h.TimerFired(s.now(), TimerKind.QUEUE_TIMEOUT, "a1", key))
    s.publish(key, S.FAILED, error)
    s.snapshot(key, S.FAILED, error, results=(f"failed: {error}",))
    return s


@pytest.mark.clause("TC-REC-NOTRUN", "TC-REC-FAIL")
def test_a_record_meaning_judges_the_did_not_run_error_against_the_page_not_its_copies() -> None:
    assert _never_reached(DID_NOT_RUN).properties() == set()
    found = [v for v in _never_reached("no attempt reached a worker").check()
             if v.property == PropertyId.A_RECORD_MEANING]
    assert [v.message.split(" with ")[0] for v in found] == [
        "the event shows it failed", "the snapshot shows it failed"]
    assert "does not open with the page's 'the tool did not run" in found[0].message


@pytest.mark.clause("TC-RCN-FIND")
def test_a_record_meaning_catches_an_outcome_unknown_record_without_its_failure() -> None:
    def unknown(error: str) -> set[str]:
        s = Story()
        s.policy("send", NONIDEM, False)
        s.session()
        key = s.ask("send", "c1")
        s.hand(key, "a1", "w1", "send")
        s.lost("w1")
        s.publish(key, S.OUTCOME_UNKNOWN, error)
        s.report(key)
        return s.properties()

    assert unknown(UNKNOWN) == set()
    assert unknown("") == {PropertyId.A_RECORD_MEANING}
    assert unknown(OUTCOME_UNKNOWN_ERROR) == {PropertyId.A_RECORD_MEANING}, "it names no failure"
    assert unknown(UNKNOWN_CANCELLED) == {
        PropertyId.A_RECORD_MEANING}, "the failure it names is not the one that happened"


@pytest.mark.clause("D-3", "TC-REC-FAIL")
def test_a_record_meaning_catches_a_tool_failure_left_out_of_the_error() -> None:
    """The ledger says which failure the tool reported; the record must carry it to the
    model, whatever its other copies say."""
    def failed(error: str) -> set[str]:
        s = Story()
        s.policy("send", NONIDEM, False)
        s.session()
        key = s.ask("send", "c1")
        s.hand(key, "a1", "w1", "send")
        run = s.run(key, "a1", "w1", "send")
        s.end(run, h.RunEnd.TOOL_FAILED, "card declined")
        s.result("w1", "a1", False)
        s.publish(key, S.FAILED, error)
        s.snapshot(key, S.FAILED, error)
        return s.properties()

    assert failed(f"{TOOL_ERROR}: card declined") == set()
    assert failed(TOOL_ERROR) == {PropertyId.A_RECORD_MEANING}
    assert failed(f"{TOOL_ERROR}: timed out") == {PropertyId.A_RECORD_MEANING}


@pytest.mark.clause("D-3", "TC-AMO-3")
def test_a_record_meaning_asks_only_the_deciding_attempts_failure_of_the_error() -> None:
    """A run of an attempt that timed out reports its failure afterwards; the next attempt's
    tool failure decides the call, and only that one must be in the error: one the ledger
    shows, or, when that run never got on record, whatever its worker reported."""
    def failed(error: str, second_run: bool) -> set[str]:
        s = Story()
        s.policy("update", IDEM)
        s.session()
        key = s.ask("update", "c1")
        s.hand(key, "a1", "w1", "update")
        first = s.run(key, "a1", "w1", "update")
        s.timed_out(key, "a1")
        s.cancel("w1", "a1")
        s.end(first, h.RunEnd.TOOL_FAILED, "late failure")
        s.hand(key, "a2", "w2", "update")
        if second_run:
            s.end(s.run(key, "a2", "w2", "update"), h.RunEnd.TOOL_FAILED, "card declined")
        s.result("w2", "a2", False)
        s.publish(key, S.FAILED, error)
        return s.properties() & {PropertyId.A_RECORD_MEANING}

    assert failed(f"{TOOL_ERROR}: card declined", second_run=True) == set()
    assert failed(f"{TOOL_ERROR}: late failure", second_run=True) == {
        PropertyId.A_RECORD_MEANING}
    assert failed(f"{TOOL_ERROR}: update did not run: no ledger", second_run=False) == set()


def _seen(kept: tuple[EffectClass, bool, float | None] | None = None,
          attempts: tuple[AttemptView, ...] = ()) -> set[str]:
    """A call of a write that needs approval (the executor's 300 s deadline), approved, lost
    with its worker and recorded outcome_unknown, then seen in a snapshot that says it kept
    `kept` and shows `attempts` as its history."""
    s = Story()
    s.policy("cancel", NONIDEM)
    s.session()
    key = s.ask("cancel", "c1")
    s.waits(key)
    s.answer(key, True, True, ACCEPTED)
    s.hand(key, "a1", "w1", "cancel")
    s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    view = ToolCallView("t1", "c1", "cancel", S.OUTCOME_UNKNOWN, UNKNOWN, key,
                        attempts=attempts, history=bool(attempts))
    s.add(h.SnapshotSeen(s.now(), key, S.OUTCOME_UNKNOWN, UNKNOWN, key, None, None, kept,
                         h.progress_of(view)))
    s.report(key)
    return s.properties()


@pytest.mark.clause("TC-REC-NOTRUN")
def test_a_record_meaning_catches_a_did_not_run_error_that_names_a_reach() -> None:
    def unreached(error: str) -> set[str]:
        s = Story()
        s.policy("send", NONIDEM, False)
        s.session()
        key = s.ask("send", "c1")
        s.queued(key, "a1")
        s.publish(key, S.FAILED, error)
        return s.properties()

    assert unreached(DID_NOT_RUN) == set()
    assert unreached(f"{DID_NOT_RUN}: {unknown_detail(AttemptEnd.NOT_REACHED)}") == {
        PropertyId.A_RECORD_MEANING}


@pytest.mark.clause("D-10", "TC-REC-NOTRUN")
@pytest.mark.parametrize(("effect", "caught"), [(NONIDEM, PropertyId.A_ONE_ATTEMPT),
                                                (READ, PropertyId.A_EXHAUSTED_RECORD)])
def test_an_attempt_handed_out_after_its_queue_timeout_ended_it_is_caught(
        effect: EffectClass, caught: str) -> None:
    def handed(after_timeout: bool) -> set[str]:
        s = Story()
        s.policy("tool", effect, False)
        s.session()
        key = s.ask("tool", "c1")
        s.queued(key, "a1")
        if after_timeout:
            s.add(h.TimerFired(s.now(), TimerKind.QUEUE_TIMEOUT, "a1", key))
        s.hand(key, "a1", "w1", "tool")
        run = s.run(key, "a1", "w1", "tool")
        s.end(run)
        s.result("w1", "a1", True)
        s.publish(key, S.SUCCEEDED)
        return s.properties()

    assert handed(False) == set()
    assert handed(True) == {caught}


@pytest.mark.clause("TC-AMO-3", "D-9")
def test_a_run_timeout_that_fires_before_its_time_after_started_is_caught() -> None:
    """The run timeout counts again from the worker's Started (start-to-close): one that
    fires sooner after it cut the attempt short."""
    def timed_out(seconds_after_started: float) -> set[str]:
        s = Story(ExecutorConfig(run_timeout=5.0))
        s.policy("search", READ)
        s.session()
        key = s.ask("search", "c1")
        s.hand(key, "a1", "w1", "search")
        s.started("w1", "a1")
        s.t += seconds_after_started - 1.0
        s.timed_out(key, "a1")
        s.cancel("w1", "a1")
        s.publish(key, S.FAILED, MAY_HAVE_RUN)
        return s.properties()

    assert PropertyId.A_CANCEL_ON_TIMEOUT not in timed_out(5.0)
    assert PropertyId.A_CANCEL_ON_TIMEOUT in timed_out(4.5)


@pytest.mark.clause("TC-SNAP-1", "D-32")
def test_a_policy_snapshot_judges_what_the_snapshot_says_the_call_kept() -> None:
    deadline = ExecutorConfig().approval_deadline
    assert _seen((NONIDEM, True, deadline)) == set()
    assert _seen() == set(), "an engine that shows no policy is not judged on it"
    assert _seen((IDEM, True, deadline)) == {PropertyId.A_POLICY_SNAPSHOT}
    assert _seen((NONIDEM, False, None)) == {PropertyId.A_POLICY_SNAPSHOT}
    assert _seen((NONIDEM, True, deadline + 1)) == {PropertyId.A_POLICY_SNAPSHOT}
    assert _seen((NONIDEM, True, None)) == set(), "an engine may show no deadline"


@pytest.mark.clause("D-30")
def test_a_record_meaning_judges_the_progress_the_history_shows_for_each_end() -> None:
    def lost(progress: AttemptProgress | None) -> AttemptView:
        return AttemptView(1, 0.0, "w1", 0.0, None, 1.0, AttemptEnd.WORKER_LOST, progress)

    assert _seen(attempts=(lost(AttemptProgress.NOT_COMPLETED),)) == set()
    assert _seen(attempts=(lost(AttemptProgress.UNSPECIFIED),)) == set()
    assert _seen(attempts=(lost(None),)) == {PropertyId.A_RECORD_MEANING}
    assert _seen(attempts=(lost(AttemptProgress.NOT_STARTED),)) == {PropertyId.A_RECORD_MEANING}


@pytest.mark.clause("TC-REC-REJ")
@pytest.mark.parametrize("person", [True, False])
def test_a_record_meaning_catches_a_rejection_that_gives_the_other_reason(person: bool) -> None:
    def rejected(error: str) -> set[str]:
        s = Story(ExecutorConfig(approval_deadline=5.0))
        s.policy("refund", IDEM, True)
        s.session()
        key = s.ask("refund", "c1")
        s.waits(key)
        if person:
            s.answer(key, False, True, ACCEPTED)
        else:
            s.t += 5.0
            s.deadline(key)
        s.publish(key, S.REJECTED, error)
        return s.properties()

    right, wrong = RejectReason.PERSON, RejectReason.DEADLINE
    if not person:
        right, wrong = wrong, right
    assert rejected(reject_text(right)) == set()
    assert rejected(reject_text(wrong)) == {PropertyId.A_RECORD_MEANING}


@pytest.mark.clause("D-32", "D-7")
@pytest.mark.parametrize("taken_late", [True, False])
def test_an_approval_accepted_after_the_kept_deadline_is_caught_by_the_clock(
        taken_late: bool) -> None:
    """Across a restart the executor's own timer may fire late (a mutant restarts the whole
    deadline): by the clock the call's kept deadline has passed, whatever the timer did. A
    harness that sees the ask only from the client's side gives the latest moment the engine
    can have taken it, and the clock runs from there."""
    s = Story(ExecutorConfig(approval_deadline=5.0))
    s.policy("refund", IDEM, True)
    s.session()
    asked = s.now()
    key = "s/t1/c1"
    s.add(h.CallAsked(asked, key, "s", "t1", "c1", "refund", "{}",
                      taken_by=asked + 3.0 if taken_late else None))
    s.waits(key)
    s.restart()
    s.waits(key)
    s.t = asked + 7.0
    s.answer(key, True, True, ACCEPTED)
    found = [v for v in s.check() if v.property == PropertyId.A_APPROVAL]
    if taken_late:
        assert found == []
    else:
        assert found
        assert "had passed by the clock" in found[0].message


@pytest.mark.clause("TC-POL-2", "TC-REC-RETRY", "TC-EFF-READ", "TC-EFF-IDEM", "D-3")
def test_a_retry_classes_catches_a_retry_after_the_tool_reported_a_failure() -> None:
    s = Story()
    s.policy("update", IDEM)
    s.session()
    key = s.ask("update", "c1")
    s.hand(key, "a1", "w1", "update")
    run = s.run(key, "a1", "w1", "update")
    s.end(run, h.RunEnd.TOOL_FAILED)
    s.result("w1", "a1", False)
    s.hand(key, "a2", "w1", "update")
    assert PropertyId.A_RETRY_CLASSES in s.properties()


@pytest.mark.clause("TC-KEY-1", "TC-KEY-2")
def test_a_same_key_catches_a_retry_that_passes_another_key() -> None:
    s = Story()
    s.policy("update", IDEM)
    s.session()
    key = s.ask("update", "c1")
    s.hand(key, "a1", "w1", "update")
    s.lost("w1")
    s.hand(key, "a2", "w2", "update", sent_key=f"{key}-2")
    assert PropertyId.A_SAME_KEY in s.properties()


@pytest.mark.clause("TC-APR-2", "TC-APR-3", "TC-REC-REJ", "D-7")
def test_a_approval_catches_a_hand_out_before_approval() -> None:
    s = Story()
    s.policy("cancel", NONIDEM)
    s.session()
    key = s.ask("cancel", "c1")
    s.hand(key, "a1", "w1", "cancel")
    assert PropertyId.A_APPROVAL in s.properties()


@pytest.mark.clause("D-7")
def test_a_approval_catches_an_answer_accepted_after_the_deadline() -> None:
    s = Story()
    s.policy("refund", IDEM, True)
    s.session()
    key = s.ask("refund", "c1")
    s.waits(key)
    s.deadline(key)
    s.publish(key, S.REJECTED, "rejected: the approval deadline passed")
    s.answer(key, True, True, ACCEPTED)
    assert PropertyId.A_APPROVAL in s.properties()


@pytest.mark.clause("D-32", "D-7")
@pytest.mark.parametrize("own_deadline", [True, False])
def test_a_refused_answer_past_the_calls_own_deadline_is_judged_by_that_deadline(
        own_deadline: bool) -> None:
    s = Story(ExecutorConfig(approval_deadline=300.0))
    s.add(h.PolicySet(s.now(), "refund",
                      ToolPolicy(IDEM, True, 2.0 if own_deadline else None), None))
    s.session()
    key = s.ask("refund", "c1")
    s.waits(key)
    s.answer(key, True, False, REPLY_TEXT[ApprovalReply.DEADLINE_PASSED])
    s.deadline(key)
    s.publish(key, S.REJECTED, "rejected: the approval deadline passed")
    assert (PropertyId.A_APPROVAL in s.properties()) is not own_deadline


@pytest.mark.clause("TC-REC-REJ")
def test_a_approval_catches_a_rejected_record_nobody_asked_for() -> None:
    s = Story()
    s.policy("cancel", NONIDEM)
    s.session()
    key = s.ask("cancel", "c1")
    s.waits(key)
    s.answer(key, True, True, ACCEPTED)
    s.publish(key, S.REJECTED, "rejected: a person rejected the call")
    assert PropertyId.A_APPROVAL in s.properties()


@pytest.mark.clause("D-7", "D-32")
@pytest.mark.parametrize("past_deadline", [True, False])
def test_a_rejected_record_of_a_waiting_call_is_judged_by_the_clock(past_deadline: bool) -> None:
    """An engine's history may show the record before the deadline's timer (Temporal under
    load): by the deadline's time it is the deadline's rejection, before it nobody's."""
    s = Story(ExecutorConfig(approval_deadline=5.0))
    s.add(h.PolicySet(s.now(), "refund", ToolPolicy(IDEM, True), None))
    s.session()
    key = s.ask("refund", "c1")
    s.waits(key)
    if past_deadline:
        s.t += 5.0
    s.publish(key, S.REJECTED, "rejected: the approval deadline passed")
    assert (PropertyId.A_APPROVAL in s.properties()) is not past_deadline


@pytest.mark.clause("TC-SNAP-1", "TC-SNAP-2")
def test_a_policy_snapshot_catches_a_call_that_follows_a_later_policy() -> None:
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    s.policy("search", NONIDEM)
    s.waits(key)
    s.snapshot(key, S.AWAITING_APPROVAL)
    assert PropertyId.A_POLICY_SNAPSHOT in s.properties()


@pytest.mark.clause("D-22")
@pytest.mark.parametrize("lowers", [None, False])
def test_a_policy_snapshot_judges_a_hinted_call_by_the_sessions_choice_of_d22(
        lowers: bool | None) -> None:
    s = Story()
    s.policy("lookup", None, hints=ToolHints(read_only=True))
    s.session(default=NONIDEM, hints_may_lower=lowers)
    key = s.ask("lookup", "c1")
    s.waits(key)
    s.snapshot(key, S.AWAITING_APPROVAL)
    assert (PropertyId.A_POLICY_SNAPSHOT in s.properties()) is (lowers is None)


@pytest.mark.clause("TC-SNAP-1", "TC-SNAP-2")
def test_a_policy_snapshot_names_the_later_policy_a_retry_followed() -> None:
    s = Story()
    s.policy("tool", NONIDEM, False)
    s.session()
    key = s.ask("tool", "c1")
    s.policy("tool", READ)
    s.queued(key, "a1")
    s.queued(key, "a2")
    messages = [v.message for v in s.check() if v.property == PropertyId.A_POLICY_SNAPSHOT]
    assert messages
    assert "later policy (read" in messages[0]


@pytest.mark.clause("TC-AMO-3", "TC-AMO-4", "D-12")
def test_a_double_run_shape_catches_a_run_going_on_after_its_worker_was_declared_lost() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    s.run(key, "a1", "w1", "send")
    s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    assert PropertyId.A_DOUBLE_RUN_SHAPE in s.properties()


@pytest.mark.clause("TC-AMO-3", "TC-AMO-4", "D-6", "D-4")
@pytest.mark.parametrize("cancel_records_failed", [False, True])
def test_a_double_run_shape_allows_the_documented_double_run_and_witnesses_it(
        cancel_records_failed: bool) -> None:
    """Under either choice of D-4 the cancelled call's record is the documented shape."""
    s = Story(ExecutorConfig(cancel_records_failed=cancel_records_failed))
    s.policy("send", NONIDEM, False)
    s.session()
    first = s.ask("send", "c1")
    s.hand(first, "a1", "w1", "send")
    old = s.run(first, "a1", "w1", "send")
    s.timed_out(first, "a1")
    s.cancel("w1", "a1")
    if cancel_records_failed:
        s.publish(first, S.FAILED, MAY_STILL_RUN)
    else:
        s.publish(first, S.OUTCOME_UNKNOWN, UNKNOWN_CANCELLED)
        s.report(first)
    second = s.ask("send", "c2", "t2")
    s.hand(second, "a2", "w2", "send")
    new = s.run(second, "a2", "w2", "send")
    s.end(old)
    s.end(new)
    s.result("w2", "a2", True)
    s.publish(second, S.SUCCEEDED)
    history = History(s.config)
    for entry in s.entries:
        history.append(entry)
    history.finish()
    assert history.violations == []
    assert PropertyId.S_DOUBLE_RUN in history.checker.witnessed
    [double] = history.checker.double_runs
    assert (double.first, double.second, double.documented) == (first, second, True)


def _succeeded_with_output(output: str | None) -> tuple[Story, str]:
    """A read that returned `output` at the ledger and was recorded succeeded."""
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    s.queued(key, "a1")
    s.hand(key, "a1", "w1", "search")
    run = s.run(key, "a1", "w1", "search")
    s.end(run, h.RunEnd.RETURNED, output)
    s.result("w1", "a1", True)
    s.publish(key, S.SUCCEEDED)
    return s, key


@pytest.mark.clause("TC-REC-2")
def test_a_tool_result_catches_a_succeeded_call_whose_result_no_run_returned() -> None:
    s, key = _succeeded_with_output('{"hits": 3}')
    s.snapshot(key, S.SUCCEEDED, results=('{"hits": 4}',))
    found = [v for v in s.check() if v.property == PropertyId.A_TOOL_RESULT]
    assert len(found) == 1, found
    assert "no run of it returned" in found[0].message
    clean_story, clean_key = _succeeded_with_output('{"hits": 3}')
    clean_story.snapshot(clean_key, S.SUCCEEDED, results=('{"hits": 3}',))
    assert clean_story.check() == []


def test_a_tool_result_is_not_judged_against_runs_whose_output_the_ledger_lacks() -> None:
    s, key = _succeeded_with_output(None)
    s.snapshot(key, S.SUCCEEDED, results=("anything",))
    assert s.check() == []


def _unreached_with_result(result: str) -> Story:
    """A single-attempt call recorded failed before any worker took it, its tool result
    `result` in the snapshot."""
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.queued(key, "a1")
    s.publish(key, S.FAILED, DID_NOT_RUN)
    s.snapshot(key, S.FAILED, DID_NOT_RUN, results=(result,))
    return s


@pytest.mark.clause("TC-REC-2", "TC-RCN-1")
def test_a_tool_result_catches_a_record_whose_result_reads_otherwise() -> None:
    found = [v for v in _unreached_with_result("failed: something else").check()
             if v.property == PropertyId.A_TOOL_RESULT]
    assert len(found) == 1, found
    assert f"failed: {DID_NOT_RUN}" in found[0].message
    assert _unreached_with_result(f"failed: {DID_NOT_RUN}").check() == []


@pytest.mark.clause("TC-REC-2")
def test_a_tool_result_catches_two_results_for_one_call_and_one_before_the_record() -> None:
    s, key = _succeeded_with_output("ok")
    s.snapshot(key, S.SUCCEEDED, results=("ok", "ok"))
    assert PropertyId.A_TOOL_RESULT in s.properties()
    early = Story()
    early.policy("search", READ)
    early.session()
    key = early.ask("search", "c1")
    early.queued(key, "a1")
    early.snapshot(key, S.RUNNING, results=("ok",))
    assert PropertyId.A_TOOL_RESULT in early.properties()
    missing, key = _succeeded_with_output("ok")
    missing.snapshot(key, S.SUCCEEDED, results=())
    assert PropertyId.A_TOOL_RESULT in missing.properties()


def _timed_out_at_w1(cancel: str | None) -> Story:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    run = s.run(key, "a1", "w1", "send")
    s.timed_out(key, "a1")
    if cancel is not None:
        s.cancel(cancel, "a1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN_CANCELLED)
    s.end(run)
    s.report(key)
    return s


@pytest.mark.clause("TC-AMO-3")
def test_a_cancel_on_timeout_catches_a_timed_out_attempt_whose_worker_is_never_told() -> None:
    found = [v for v in _timed_out_at_w1(None).check()
             if v.property == PropertyId.A_CANCEL_ON_TIMEOUT]
    assert [v.key for v in found] == ["s/t1/c1"]
    assert "never sent a cancel" in found[0].message


@pytest.mark.clause("TC-AMO-3")
def test_a_cancel_on_timeout_catches_a_cancel_sent_to_another_worker() -> None:
    assert PropertyId.A_CANCEL_ON_TIMEOUT in _timed_out_at_w1("w2").properties()
    assert _timed_out_at_w1("w1").check() == []


@pytest.mark.clause("TC-AMO-3")
def test_a_cancel_on_timeout_asks_nothing_of_an_attempt_that_already_ended() -> None:
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    s.hand(key, "a1", "w1", "search")
    s.lost("w1")
    s.timed_out(key, "a1")
    s.publish(key, S.FAILED, MAY_HAVE_RUN)
    assert PropertyId.A_CANCEL_ON_TIMEOUT not in s.properties()


@pytest.mark.clause("D-8")
def test_a_double_run_shape_allows_a_run_lost_at_a_restart_to_go_on() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    run = s.run(key, "a1", "w1", "send")
    s.restart()
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    s.end(run, h.RunEnd.STOPPED)
    s.report(key)
    assert s.check() == []


@pytest.mark.clause("D-6")
def test_a_fence_catches_a_new_run_while_an_abandoned_run_goes_on() -> None:
    s = Story(ExecutorConfig(fence=True))
    s.policy("send", NONIDEM, False)
    s.session()
    first = s.ask("send", "c1")
    s.hand(first, "a1", "w1", "send")
    s.run(first, "a1", "w1", "send")
    s.timed_out(first, "a1")
    s.cancel("w1", "a1")
    s.publish(first, S.OUTCOME_UNKNOWN, UNKNOWN_CANCELLED)
    s.report(first)
    second = s.ask("send", "c2", "t2")
    s.hand(second, "a2", "w2", "send")
    s.run(second, "a2", "w2", "send")
    assert s.properties() == {PropertyId.A_FENCE, PropertyId.E_EVERY_CALL_RECORDED}


@pytest.mark.clause("D-6")
def test_the_fence_does_not_hold_back_a_call_handed_out_before_the_other_was_abandoned() -> None:
    s = Story(ExecutorConfig(fence=True))
    s.policy("send", NONIDEM, False)
    s.session()
    first = s.ask("send", "c1")
    second = s.ask("send", "c2", "t2")
    s.hand(first, "a1", "w1", "send")
    s.run(first, "a1", "w1", "send")
    s.hand(second, "a2", "w2", "send")
    s.timed_out(first, "a1")
    s.cancel("w1", "a1")
    s.publish(first, S.OUTCOME_UNKNOWN, UNKNOWN)
    s.run(second, "a2", "w2", "send")
    assert PropertyId.A_FENCE not in s.properties()


def _heartbeating(gap: float) -> tuple[Story, int, list[int], int]:
    """A write handed to w1 whose worker heartbeats twice, then is declared lost `gap`
    seconds after its last heartbeat reached the executor (heartbeat timeout 10 s): the
    story, where the hand-out, the heartbeats and the declaration are."""
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.queued(key, "a1")
    handed = s.hand(key, "a1", "w1", "send")
    run = s.run(key, "a1", "w1", "send")
    s.started("w1", "a1")
    beats = [s.beat("w1", "a1"), s.beat("w1", "a1")]
    s.end(run, h.RunEnd.STOPPED)
    s.wait(gap - 2.0)
    lost = s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    s.report(key)
    return s, handed, beats, lost


@pytest.mark.clause("TC-REC-LOST", "D-12")
def test_a_heard_keeps_attempt_catches_a_worker_declared_lost_while_heartbeating() -> None:
    s, handed, beats, lost = _heartbeating(4.0)
    found = [v for v in s.check() if v.property == PropertyId.A_HEARD_KEEPS_ATTEMPT]
    assert [v.positions for v in found] == [(handed, *beats, lost)]
    at_lost, at_beat = s.entries[lost].at, s.entries[beats[-1]].at
    assert found[0].line().startswith(
        f"A-HEARD-KEEPS-ATTEMPT [s/t1/c1]: worker w1 was declared lost at {at_lost:.3f} while "
        f"heartbeating (last heartbeat at {at_beat:.3f}, within the 10 s heartbeat timeout)")


@pytest.mark.clause("TC-REC-LOST", "D-12")
def test_a_worker_silent_for_the_whole_heartbeat_timeout_may_be_declared_lost() -> None:
    assert _heartbeating(10.0)[0].check() == []
    assert _heartbeating(17.0)[0].check() == []
    assert PropertyId.A_HEARD_KEEPS_ATTEMPT in _heartbeating(9.9)[0].properties()


def test_a_timer_a_rounding_error_short_of_the_timeout_is_not_a_violation() -> None:
    s = Story(ExecutorConfig(heartbeat_timeout=10.0))
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    beat = 13.37
    s.add(h.HeartbeatDelivered(beat, "w1", "a1"))
    s.add(h.WorkerDeclaredLost(beat + 10.0, "w1"))
    assert (beat + 10.0) - beat < 10.0
    assert PropertyId.A_HEARD_KEEPS_ATTEMPT not in s.properties()


@pytest.mark.clause("TC-AMO-2", "D-8")
@pytest.mark.parametrize("afresh", ["connected again", "server restarted"])
def test_an_attempt_lost_to_a_new_connection_or_a_restart_is_not_lost_while_heard(
        afresh: str) -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    s.beat("w1", "a1")
    if afresh == "connected again":
        s.connected("w1")
    else:
        s.restart()
    s.lost("w1")
    assert PropertyId.A_HEARD_KEEPS_ATTEMPT not in s.properties()


def test_a_declaration_that_ends_no_attempt_is_not_judged() -> None:
    s, _, _, _ = _heartbeating(10.0)
    s.beat("w1", "a1")
    s.lost("w1")
    assert s.check() == []


# -- eventually-properties ----------------------------------------------------------------------


@pytest.mark.clause("TC-REC-1")
def test_e_every_call_recorded_catches_a_call_left_without_a_record() -> None:
    s = Story()
    s.policy("search", READ)
    s.session()
    key = s.ask("search", "c1")
    s.queued(key, "a1")
    history = History(s.config)
    for entry in s.entries:
        assert history.append(entry) == []
    assert [v.property for v in history.finish()] == [PropertyId.E_EVERY_CALL_RECORDED]


def test_e_every_call_recorded_accepts_a_record_seen_only_in_the_snapshot() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.queued(key, "a1")
    s.snapshot(key, S.FAILED, DID_NOT_RUN)
    assert s.check() == []


@pytest.mark.clause("TC-RCN-ONCE", "TC-RCN-TELL")
def test_e_reconcile_once_catches_an_unknown_call_never_reported() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    assert PropertyId.E_RECONCILE_ONCE in s.properties()


@pytest.mark.clause("TC-RCN-ONCE")
def test_e_reconcile_once_catches_a_second_report_as_soon_as_it_is_sent() -> None:
    s = Story()
    s.policy("send", NONIDEM, False)
    s.session()
    key = s.ask("send", "c1")
    s.hand(key, "a1", "w1", "send")
    s.lost("w1")
    s.publish(key, S.OUTCOME_UNKNOWN, UNKNOWN)
    s.report(key)
    history = History(s.config)
    for entry in s.entries:
        assert history.append(entry) == []
    s.report(key)
    assert [v.property for v in history.append(s.entries[-1])] == [PropertyId.E_RECONCILE_ONCE]
