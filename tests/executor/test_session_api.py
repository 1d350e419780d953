"""The session API's shapes: the snapshot, the message history, finished events, user messages,
and keys (D-2)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import Ask, ExecutorConfig, Persist, Reply, TimerKind
from atmostonce.spec.reconcile import pending_reports, report_text
from atmostonce.spec.records import OUTCOME_UNKNOWN_ERROR, AttemptEnd, unknown_detail
from atmostonce.spec.session import (
    OUTCOME_UNKNOWN_TOOL_RESULT,
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallFinished,
    ToolCallStatus,
    ToolCallView,
)
from tests.executor.driver import Driver

LOST_UNKNOWN = f"{OUTCOME_UNKNOWN_ERROR}: {unknown_detail(AttemptEnd.WORKER_LOST)}"
"""The error of a single-attempt call whose worker was lost (attempt progress NOT_COMPLETED)."""


def mixed() -> tuple[Driver, list[str]]:
    """Four calls of one session: awaiting approval, running, succeeded, outcome_unknown."""
    d = Driver(ExecutorConfig())
    d.open()
    d.policy("refund", EffectClass.NON_IDEMPOTENT_WRITE)
    d.policy("lookup", EffectClass.READ)
    d.policy("cancel", EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False)
    keys = [d.ask("refund", "c1"), d.ask("lookup", "c2", arguments='{"id": 2}'),
            d.ask("cancel", "c3", arguments='{"order": 1002}'), d.ask("lookup", "c4")]
    assert d.run("w1", output="found").key == keys[1]
    go = d.poll("w2")
    assert go is not None
    assert go.key == keys[2]
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w2")
    return d, keys


@pytest.mark.clause("TC-RCN-FIND", "TC-RCN-KEY", "TC-REC-2")
def test_the_snapshot_lists_calls_in_ask_order_with_status_error_and_key() -> None:
    d, keys = mixed()
    shown = d.snapshot()
    bare = tuple(replace(v, effect=None, requires_approval=None, approval_deadline=None,
                         attempts=(), history=False) for v in shown.tool_calls)
    snapshot = replace(shown, tool_calls=bare)
    assert snapshot == AgentSnapshot("s1", (
        ToolCallView("t1", "c1", "refund", ToolCallStatus.AWAITING_APPROVAL, "", keys[0]),
        ToolCallView("t1", "c2", "lookup", ToolCallStatus.SUCCEEDED, "", keys[1]),
        ToolCallView("t1", "c3", "cancel", ToolCallStatus.OUTCOME_UNKNOWN,
                     LOST_UNKNOWN, keys[2]),
        ToolCallView("t1", "c4", "lookup", ToolCallStatus.RUNNING, "", keys[3]),
    ), snapshot.messages)


@pytest.mark.clause("TC-RCN-FIND", "TC-REC-2", "TC-RCN-1")
def test_records_become_tool_messages_and_finished_events() -> None:
    d, _ = mixed()
    assert d.snapshot().messages == (
        Message(MessageRole.TOOL, turn_id="t1", tool_call_id="c2", tool_output="found",
                tool_arguments='{"id": 2}'),
        Message(MessageRole.TOOL, turn_id="t1", tool_call_id="c3",
                tool_output=f"{OUTCOME_UNKNOWN_TOOL_RESULT}: {LOST_UNKNOWN}",
                tool_arguments='{"order": 1002}'),
    )
    assert d.published == [
        ToolCallFinished("s1", "t1", "c2", ToolCallStatus.SUCCEEDED),
        ToolCallFinished("s1", "t1", "c3", ToolCallStatus.OUTCOME_UNKNOWN,
                         LOST_UNKNOWN),
    ]


@pytest.mark.clause("TC-RCN-TELL", "TC-RCN-ONCE", "TC-RCN-KEY")
def test_a_user_message_joins_the_history_and_reconcile_sees_it() -> None:
    d, keys = mixed()
    (pending,) = pending_reports("s1", d.snapshot().messages)
    assert (pending.key, pending.tool_arguments) == (keys[2], '{"order": 1002}')
    text = report_text("the order system", "the cancellation went through", pending.key)
    assert d.user_message(text) == Reply("u1", True)
    assert d.snapshot().messages[-1] == Message(MessageRole.USER, text)
    assert d.entries("user_message")[-1]["text"] == text
    assert pending_reports("s1", d.snapshot().messages) == []


@pytest.mark.clause("TC-RCN-TELL")
def test_a_user_message_to_an_unknown_session_is_refused() -> None:
    d = Driver()
    reply = d.user_message("hello", session="nowhere")
    assert not reply.ok
    assert "nowhere" in reply.text
    assert d.journal == []
    assert d.snapshot("nowhere") == AgentSnapshot("nowhere", (), ())


@pytest.mark.clause("D-2", "TC-KEY-2")
@pytest.mark.parametrize(("turn", "call"), [("t/1", "c1"), ("t1", ""), ("t1", "c 1")])
def test_an_ambiguous_key_component_is_rejected_before_anything_changes(
    turn: str, call: str,
) -> None:
    d = Driver()
    d.open()
    with pytest.raises(SpecError, match=r"turn_id|tool_call_id"):
        d.send(Ask(d.now, "s1", turn, call, "tool"))
    assert d.snapshot().tool_calls == ()


@pytest.mark.clause("TC-KEY-1")
def test_a_second_ask_with_the_same_key_is_ignored() -> None:
    d = Driver()
    d.open()
    d.ask("tool")
    assert d.send(Ask(d.now, "s1", "t1", "c1", "other")) == []
    assert len(d.snapshot().tool_calls) == 1
    assert sum(isinstance(c, Persist) and c.entry["type"] == "ask" for c in d.log) == 1


@pytest.mark.clause("TC-RCN-NOSEARCH", "TC-RCN-1")
def test_nothing_waits_on_an_unknown_call_so_only_a_reconcile_job_finds_it() -> None:
    d, keys = mixed()
    unknown = keys[2]
    assert d.view(unknown).status is ToolCallStatus.OUTCOME_UNKNOWN
    assert not any(unknown in subject for _, subject in d.timers)
    d.connect("w3")
    go = d.poll("w3")
    assert go is None or go.key != unknown
    messages = d.snapshot().messages
    assert not any(m.role is MessageRole.USER for m in messages)
    assert [p.key for p in pending_reports("s1", messages)] == [unknown]
