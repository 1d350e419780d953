"""The session's shapes and reconcile's pure selection of calls still to report."""

from __future__ import annotations

import pytest

from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.reconcile import pending_reports, report_text
from atmostonce.spec.records import (
    AttemptEnd,
    Outcome,
    Record,
    classify_attempts,
    record_of,
)
from atmostonce.spec.session import (
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
