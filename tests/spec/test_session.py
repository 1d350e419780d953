"""The session's shapes and reconcile's pure selection of calls still to report."""

from __future__ import annotations

import pytest

from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.reconcile import CallKind, pending_reports, report_text, reported_keys
from atmostonce.spec.records import (
    AttemptEnd,
    Outcome,
    Record,
    RejectReason,
    classify_attempts,
    record_of,
    reject_text,
)
from atmostonce.spec.session import (
    MAY_STILL_BE_RUNNING_TOOL_RESULT,
    OUTCOME_UNKNOWN_TOOL_RESULT,
    Message,
    MessageRole,
    ToolCallStatus,
    tool_result_text,
)


def unknown_result(turn: str, call: str) -> Message:
    outcome = record_of(classify_attempts(EffectClass.NON_IDEMPOTENT_WRITE,
                                          (AttemptEnd.WORKER_LOST,), 1))
    return Message(MessageRole.TOOL, turn_id=turn, tool_call_id=call,
                   tool_output=tool_result_text(outcome), tool_arguments='{"order": 1002}')


@pytest.mark.clause("TC-REC-2", "TC-RCN-1", "TC-RCN-FIND")
@pytest.mark.parametrize("record", list(Record))
def test_every_record_becomes_a_tool_result_the_model_reads(record: Record) -> None:
    text = tool_result_text(Outcome(record, "why"), "result")
    assert text
    assert (OUTCOME_UNKNOWN_TOOL_RESULT in text) == (record is Record.OUTCOME_UNKNOWN)
    assert ToolCallStatus.of_record(record).final


@pytest.mark.clause("TC-REC-2", "TC-REC-REJ")
@pytest.mark.parametrize("reason", list(RejectReason))
def test_a_rejected_calls_tool_result_names_its_record_once(reason: RejectReason) -> None:
    text = tool_result_text(Outcome(Record.REJECTED, reject_text(reason)))
    assert text == reject_text(reason)
    assert text.startswith("rejected: ")
    assert "rejected: rejected:" not in text
    assert tool_result_text(Outcome(Record.FAILED, "boom")) == "failed: boom"


@pytest.mark.clause("TC-RCN-ONCE", "TC-RCN-KEY")
def test_reconcile_skips_calls_a_user_message_already_reports() -> None:
    history = [unknown_result("turn-1", "call-1"), unknown_result("turn-2", "call-5")]
    pending = pending_reports("s-1", history)
    assert [p.key for p in pending] == ["s-1/turn-1/call-1", "s-1/turn-2/call-5"]
    note = report_text("the order system", "order 1002 was cancelled", pending[0].key)
    history.append(Message(MessageRole.USER, text=note))
    assert [p.key for p in pending_reports("s-1", history)] == [build_key("s-1", "turn-2",
                                                                           "call-5")]


@pytest.mark.clause("TC-RCN-TELL")
def test_report_reads_as_a_note_from_the_application_naming_the_key() -> None:
    text = report_text("the order system", "the cancellation went through", "s/t/c")
    assert text.startswith("Note from the order system:")
    assert text.endswith("(tool call s/t/c)")


@pytest.mark.clause("TC-RCN-FIND")
def test_only_unknown_results_are_pending() -> None:
    ok = Message(MessageRole.TOOL, turn_id="t", tool_call_id="c",
                 tool_output=tool_result_text(Outcome(Record.SUCCEEDED, ""), "done"))
    assert pending_reports("s", [ok]) == []


def cancelled_result(turn: str, call: str) -> Message:
    """The tool result of a cancelled call under D-4's other choice (F-7)."""
    outcome = record_of(classify_attempts(EffectClass.NON_IDEMPOTENT_WRITE,
                                          (AttemptEnd.CANCELLED,), 1,
                                          cancel_records_failed=True))
    return Message(MessageRole.TOOL, turn_id=turn, tool_call_id=call,
                   tool_output=tool_result_text(outcome), tool_arguments='{"order": 7}')


def page_rule_skips(key: str, history: list[Message]) -> bool:
    """The page's example: a call is skipped when its key occurs anywhere in the user
    messages."""
    sent = "\n".join(m.text for m in history if m.role is MessageRole.USER)
    return key in sent


@pytest.mark.clause("D-21", "TC-RCN-ONCE")
def test_d21_a_key_inside_a_longer_reported_key_is_not_taken_as_reported() -> None:
    history = [unknown_result("t1", "call-1"), unknown_result("t1", "call-12")]
    history.append(Message(MessageRole.USER,
                           report_text("the order system", "it went through", "s/t1/call-12")))
    assert page_rule_skips("s/t1/call-1", history)
    assert [p.key for p in pending_reports("s", history)] == ["s/t1/call-1"]


@pytest.mark.clause("D-21")
def test_d21_a_key_in_a_users_own_words_is_not_a_report() -> None:
    history = [unknown_result("t1", "c1"),
               Message(MessageRole.USER, "did s/t1/c1 go through? (asking)")]
    assert page_rule_skips("s/t1/c1", history)
    assert [p.key for p in pending_reports("s", history)] == ["s/t1/c1"]


@pytest.mark.clause("D-21", "TC-RCN-ONCE")
def test_d21_a_key_with_parentheses_is_recognised_whole_so_a_rerun_sends_nothing() -> None:
    history = [unknown_result("t(1)", "call(2)"), unknown_result("t(1)", "call(2))x")]
    keys = [p.key for p in pending_reports("s", history)]
    assert keys == ["s/t(1)/call(2)", "s/t(1)/call(2))x"]
    history.append(Message(MessageRole.USER, report_text("the shop", "done", keys[0])))
    assert reported_keys(history) == frozenset({keys[0]})
    assert [p.key for p in pending_reports("s", history)] == [keys[1]]
    history.append(Message(MessageRole.USER, report_text("the shop", "done", keys[1])))
    assert pending_reports("s", history) == []


@pytest.mark.clause("D-20", "F-7", "D-4")
def test_d20_cancelled_calls_are_pending_only_when_included_each_with_its_kind() -> None:
    history = [cancelled_result("t1", "c1"), unknown_result("t1", "c2")]
    assert history[0].tool_output.startswith(MAY_STILL_BE_RUNNING_TOOL_RESULT)
    assert [p.key for p in pending_reports("s", history)] == ["s/t1/c2"]
    # By default (D-4) the cancelled call is outcome_unknown, which the page's steps find.
    default = record_of(classify_attempts(EffectClass.NON_IDEMPOTENT_WRITE,
                                          (AttemptEnd.CANCELLED,), 1))
    assert default.record is Record.OUTCOME_UNKNOWN
    pending = pending_reports("s", history, include_cancelled=True)
    assert [(p.key, p.kind) for p in pending] == [
        ("s/t1/c1", CallKind.MAY_STILL_BE_RUNNING), ("s/t1/c2", CallKind.OUTCOME_UNKNOWN)]
    assert pending[0].tool_arguments == '{"order": 7}'
    history.append(Message(MessageRole.USER, report_text("the shop", "it landed", "s/t1/c1")))
    assert [p.key for p in pending_reports("s", history, include_cancelled=True)] == ["s/t1/c2"]


@pytest.mark.clause("D-20", "D-3")
def test_d20_a_failure_the_tool_reported_is_never_pending() -> None:
    reported = record_of(classify_attempts(EffectClass.NON_IDEMPOTENT_WRITE,
                                           (AttemptEnd.TOOL_FAILED,), 1))
    message = Message(MessageRole.TOOL, turn_id="t", tool_call_id="c",
                      tool_output=tool_result_text(reported))
    assert pending_reports("s", [message], include_cancelled=True) == []


@pytest.mark.clause("TC-RCN-NAMES", "TC-RCN-FIND")
def test_the_example_names_and_shapes_exist_as_the_page_uses_them() -> None:
    import inspect

    from atmostonce.runtime.client import AsyncClient
    from atmostonce.runtime.reconcile import SessionMessenger, report_unknown_outcomes
    from atmostonce.spec import session

    for name in ("OUTCOME_UNKNOWN_TOOL_RESULT", "AgentSnapshot", "MessageRole"):
        assert hasattr(session, name)
    assert session.MessageRole.USER.value == "user"
    fields = set(session.Message.__dataclass_fields__)
    assert {"role", "text", "turn_id", "tool_call_id", "tool_output",
            "tool_arguments"} <= fields
    assert "messages" in session.AgentSnapshot.__dataclass_fields__
    for method in ("get_agent_snapshot", "send_user_message"):
        wanted = inspect.signature(getattr(SessionMessenger, method))
        have = inspect.signature(getattr(AsyncClient, method))
        assert list(have.parameters) == list(wanted.parameters)
        assert inspect.iscoroutinefunction(getattr(AsyncClient, method))
    assert inspect.signature(AsyncClient.send_user_message).return_annotation in (bool, "bool")
    assert list(inspect.signature(report_unknown_outcomes).parameters)[:3] == [
        "sessions", "session_id", "check"]
