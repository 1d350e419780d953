"""What a finished history says about each call for statistics: its go-ahead is when its first
attempt was handed to a worker, however many followed; its wait for a person ends at the
accepted answer or at the deadline; its record's error comes along."""

from __future__ import annotations

from atmostonce.check.history.checkers import CallSummary, History
from atmostonce.spec.records import RejectReason, reject_text
from tests.check.history.story import IDEM, TOOL_ERROR, S, Story


def summaries(s: Story) -> dict[str, CallSummary]:
    history = History(s.config)
    for entry in s.entries:
        history.append(entry)
    history.finish()
    assert history.violations == []
    return {c.key: c for c in history.checker.summaries()}


def test_the_go_ahead_is_the_first_hand_out_of_a_retried_call() -> None:
    s = Story()
    s.policy("update", IDEM)
    s.session()
    key = s.ask("update", "c1")
    s.queued(key, "a1")
    first = s.hand(key, "a1", "w1", "update")
    s.lost("w1")
    s.queued(key, "a2")
    s.hand(key, "a2", "w2", "update")
    run = s.run(key, "a2", "w2", "update")
    s.started("w2", "a2")
    s.end(run)
    s.result("w2", "a2", True)
    s.publish(key, S.SUCCEEDED)
    call = summaries(s)[key]
    assert call.attempts == 2
    assert call.handed_at == s.entries[first].at
    assert call.approval_at is None
    assert call.error == ""


def test_the_wait_for_a_person_ends_at_the_answer_or_at_the_deadline() -> None:
    s = Story()
    s.policy("refund", IDEM, approval=True)
    s.session()
    answered = s.ask("refund", "c1")
    s.waits(answered)
    s.wait(40.0)
    s.answer(answered, approve=False, ok=True)
    answer_at = s.t
    s.publish(answered, S.REJECTED, reject_text(RejectReason.PERSON))
    expired = s.ask("refund", "c2", turn="t2")
    s.waits(expired)
    s.wait(s.config.approval_deadline)
    s.deadline(expired)
    deadline_at = s.t
    s.publish(expired, S.REJECTED, reject_text(RejectReason.DEADLINE))
    calls = summaries(s)
    assert calls[answered].approval_at == answer_at
    assert calls[answered].handed_at is None
    assert calls[answered].error == reject_text(RejectReason.PERSON)
    assert calls[expired].approval_at == deadline_at


def test_a_call_that_never_waited_has_no_wait_and_keeps_its_error() -> None:
    s = Story()
    s.policy("update", IDEM)
    s.session()
    key = s.ask("update", "c1")
    s.queued(key, "a1")
    s.hand(key, "a1", "w1", "update")
    run = s.run(key, "a1", "w1", "update")
    s.started("w1", "a1")
    s.end(run)
    s.result("w1", "a1", False)
    s.publish(key, S.FAILED, TOOL_ERROR)
    call = summaries(s)[key]
    assert call.approval_at is None
    assert call.error == TOOL_ERROR
