"""The LangGraph mapping's rules without agent processes: the tool result each outcome gives the
model and the record a team reads back from it, the scripted model's turns, the application's
store (policies kept at ask time, D-7's answers with the deadline by the clock), the snapshot
read off a thread's messages, the server log, and the retries, run on LangGraph's real retry
mechanisms with an effect ledger that is out of reach."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from atmostonce.chaos.nemesis import NemesisKind
from atmostonce.chaos.run import _check_targets
from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import Limits
from atmostonce.engines.appstore import CallRow
from atmostonce.engines.langgraph import graphs, mapping
from atmostonce.engines.langgraph.adapter import NO_TARGET, NOT_CHECKABLE
from atmostonce.engines.langgraph.checkpoints import durable_attempts
from atmostonce.engines.langgraph.client import snapshot_of
from atmostonce.engines.langgraph.kits import KITS
from atmostonce.engines.langgraph.model import ScriptedChatModel, answer, asked_ids, next_turn
from atmostonce.engines.langgraph.server_log import server_log
from atmostonce.engines.langgraph.store import ThreadedStore
from atmostonce.engines.langgraph.tools import RunContext
from atmostonce.engines.notes import Notes
from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply, ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.properties import PROPERTIES
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import Outcome, Record, RejectReason
from atmostonce.spec.session import (
    OUTCOME_UNKNOWN_TOOL_RESULT,
    MessageRole,
    ToolCallStatus,
    tool_result_text,
)

S = ToolCallStatus
CONFIG = ExecutorConfig(max_attempts=3, retry_backoff=0.01, approval_deadline=30.0)


# -- tool results and records ------------------------------------------------------------------


@pytest.mark.clause("TC-REC-2", "TC-REC-SUCC", "TC-REC-FAIL", "TC-REC-REJ", "TC-REC-UNK", "D-3")
def test_each_tool_result_reads_back_as_its_record_and_is_the_text_the_spec_gives() -> None:
    results = {
        S.FAILED: [mapping.tool_failed("refund refused"), mapping.exhausted(read=True)],
        S.REJECTED: [mapping.rejected(RejectReason.PERSON),
                     mapping.rejected(RejectReason.DEADLINE)],
        S.OUTCOME_UNKNOWN: [mapping.unknown(), mapping.exhausted(read=False)],
    }
    for status, made in results.items():
        for result in made:
            assert result.status == mapping.ERROR
            read, error = mapping.record_of(result.status, result.text)
            assert read is status
            assert tool_result_text(Outcome(Record(status.value), error)) == result.text
    assert mapping.record_of(mapping.SUCCESS, '{"ok": true}') == (S.SUCCEEDED, "")
    assert mapping.unknown().text.startswith(OUTCOME_UNKNOWN_TOOL_RESULT)


def test_langchains_own_rejection_reads_as_rejected_and_any_other_error_as_failed() -> None:
    hitl = "User rejected the tool call for `refund` with reason: rejected: too much"
    assert mapping.record_of(mapping.ERROR, hitl) == (S.REJECTED, "rejected: too much")
    assert mapping.record_of(mapping.ERROR, "Error: boom") == (S.FAILED, "Error: boom")


# -- the scripted model ----------------------------------------------------------------------


def row(call_id: str, turn: str, asked: float, tool: str = "lookup_order") -> CallRow:
    return CallRow(f"s/{turn}/{call_id}", "s", turn, call_id, tool, '{"order_id": "1"}',
                   EffectClass.READ, False, asked, int(asked * 100))


def test_the_model_answers_with_the_earliest_whole_turn_once_it_is_quiet() -> None:
    calls = [row("c1", "t1", 1.0), row("c2", "t1", 1.1), row("c3", "t2", 2.0)]
    assert next_turn(calls, set(), 1.2, quiet=0.15) == []
    assert [c.call_id for c in next_turn(calls, set(), 1.3, quiet=0.15)] == ["c1", "c2"]
    assert [c.call_id for c in next_turn(calls, {"c1", "c2"}, 2.2, 0.15)] == ["c3"]
    assert next_turn(calls, {"c1", "c2", "c3"}, 9.0, 0.15) == []


def test_the_same_answer_to_the_same_messages_has_the_same_id() -> None:
    calls = [row("c1", "t1", 1.0), row("c2", "t1", 1.1)]
    first = answer("s", calls, [])
    assert first.id == answer("s", calls, []).id == "s/t1/c1"
    assert [tc["id"] for tc in first.tool_calls] == ["c1", "c2"]
    assert first.tool_calls[0]["args"] == {"order_id": "1"}
    assert asked_ids([first, HumanMessage("x")]) == {"c1", "c2"}
    idle = answer("s", [], [first])
    assert idle.tool_calls == []
    assert idle.id == answer("s", [], [first]).id


# -- the application's store -----------------------------------------------------------------


def store(tmp_path: Path) -> ThreadedStore:
    made = ThreadedStore(tmp_path / "app.db")
    made.setup()
    return made


@pytest.mark.clause("TC-SNAP-1", "TC-SNAP-2", "TC-POL-1")
def test_a_call_keeps_the_policy_in_force_when_it_was_asked(tmp_path: Path) -> None:
    app = store(tmp_path)
    app.set_policy("refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, requires_approval=True),
                   None)
    app.open_session("s", None)
    key = app.ask("s", "t1", "c1", "refund", "{}", CONFIG)
    app.set_policy("refund", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, False), None)
    later = app.ask("s", "t2", "c2", "refund", "{}", CONFIG)
    unset = app.ask("s", "t2", "c3", "notify_customer", "{}", CONFIG)
    assert app.ask("s", "t1", "c1", "refund", '{"other": 1}', CONFIG) == key
    kept = {c.key: (c.effect, c.requires_approval) for c in app.calls("s")}
    assert kept == {key: (EffectClass.IDEMPOTENT_WRITE, True),
                    later: (EffectClass.NON_IDEMPOTENT_WRITE, False),
                    unset: (EffectClass.UNCLASSIFIED, True)}
    assert set(app.approvals("s")) == {key, unset}
    with pytest.raises(SpecError, match="no session"):
        app.ask("nobody", "t1", "c1", "refund", "{}", CONFIG)


@pytest.mark.clause("D-7", "TC-APR-3", "TC-REC-REJ")
def test_the_inbox_answers_by_d7_and_judges_the_deadline_by_the_clock(tmp_path: Path) -> None:
    app = store(tmp_path)
    app.open_session("s", None)
    key = app.ask("s", "t1", "c1", "cancel_order", "{}", CONFIG)
    app.set_policy("lookup_order", ToolPolicy(EffectClass.READ), None)
    read = app.ask("s", "t1", "c2", "lookup_order", "{}", CONFIG)
    assert app.answer(key, True).accepted
    assert app.answer(key, False).text == REPLY_TEXT[ApprovalReply.ALREADY_APPROVED]
    assert app.answer(read, True).text == REPLY_TEXT[ApprovalReply.NOT_REQUIRED]
    assert not app.answer("s/t9/c9", True).accepted
    late = app.ask("s", "t2", "c3", "cancel_order", "{}", ExecutorConfig(
        approval_deadline=1e-6))
    assert app.answer(late, True).text == REPLY_TEXT[ApprovalReply.DEADLINE_PASSED]
    expired = app.ask("s", "t3", "c4", "cancel_order", "{}", ExecutorConfig(
        approval_deadline=1e-6))
    assert app.expire([expired, key]) == [expired]
    inbox = app.approvals("s")
    assert [inbox[k].state for k in (key, late, expired)] == [
        ApprovalState.APPROVED, ApprovalState.EXPIRED, ApprovalState.EXPIRED]
    assert inbox[key].answered is not None
    assert inbox[late].expired is not None


def test_a_dead_processs_threads_go_to_the_next_process_that_asks(tmp_path: Path) -> None:
    app = store(tmp_path)
    app.open_session("s1", None)
    app.open_session("s2", None)
    assert app.claim("w1-1") == "s1"
    assert app.claim("w1-1") == "s2"
    assert app.claim("w2-2") is None
    assert sorted(app.release("w1-1")) == ["s1", "s2"]
    assert app.claim("w2-2") == "s1"
    assert app.owner("s1") == "w2-2"


# -- the snapshot ------------------------------------------------------------------------------


@pytest.mark.clause("TC-REC-2", "TC-RCN-FIND")
def test_the_snapshot_reads_each_record_off_the_first_tool_message_of_its_call() -> None:
    calls = [row("c1", "t1", 1.0), row("c2", "t1", 1.0, "cancel_order"),
             row("c3", "t2", 2.0, "refund"), row("c4", "t2", 2.0)]
    rejected = mapping.rejected(RejectReason.PERSON)
    messages = [
        AIMessage("", id="s/t1/c1", tool_calls=[
            {"name": "lookup_order", "args": {}, "id": "c1", "type": "tool_call"},
            {"name": "cancel_order", "args": {}, "id": "c2", "type": "tool_call"}]),
        ToolMessage('{"a": 1}', tool_call_id="c1", status="success", id="m1"),
        ToolMessage(rejected.text, tool_call_id="c2", status="error", id="m2"),
        ToolMessage('{"a": 2}', tool_call_id="c1", status="success", id="m3"),
        HumanMessage("note", id="s/user/1"),
    ]
    snapshot = snapshot_of("s", calls, {"s/t2/c3"}, messages,
                           [("s/user/1", "note"), ("s/user/2", "later")])
    views = {v.tool_call_id: (v.status, v.error) for v in snapshot.tool_calls}
    assert views == {"c1": (S.SUCCEEDED, ""), "c2": (S.REJECTED, "rejected: a person "
                                                               "rejected the call"),
                     "c3": (S.AWAITING_APPROVAL, ""), "c4": (S.RUNNING, "")}
    results = h.tool_results("s", snapshot)
    assert results == {"s/t1/c1": ('{"a": 1}', '{"a": 2}'), "s/t1/c2": (rejected.text,)}
    users = [m.text for m in snapshot.messages if m.role is MessageRole.USER]
    assert users == ["note", "later"]


# -- the server log ------------------------------------------------------------------------------


def checkpoint_with(path: Path, attempt: str) -> None:
    """A real LangGraph checkpoint whose messages hold a tool message of `attempt`."""
    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [ToolMessage("{}", tool_call_id="c1", status="success",
                                         artifact={"attempt": attempt, "worker": "w1-1",
                                                   "key": "s/t1/c1"})]}

    builder = StateGraph(MessagesState)
    builder.add_node("tool", node)
    builder.add_edge(START, "tool")
    with sqlite3.connect(path, check_same_thread=False) as db:
        builder.compile(checkpointer=SqliteSaver(db)).invoke(
            {"messages": []}, {"configurable": {"thread_id": "s"}})


@pytest.mark.clause("TC-REC-SUCC", "D-3")
def test_a_result_is_delivered_only_when_the_checkpoints_hold_it(tmp_path: Path) -> None:
    app = store(tmp_path)
    app.open_session("s", None)
    key = app.ask("s", "t1", "c1", "cancel_order", "{}", CONFIG)
    app.answer(key, True)
    checkpoint_with(tmp_path / "checkpoints.db", f"{key}#w1-1.1")
    notes = Notes(tmp_path / "w1.notes", "w1-1")
    for attempt in (f"{key}#w1-1.1", f"{key}#w1-1.2"):
        notes.note("started", attempt=attempt, key=key, tool="cancel_order")
        notes.note("ended", attempt=attempt, ok=True)
        notes.note("delivering", attempt=attempt, key=key, of="w1-1", ok=True)
    assert durable_attempts(tmp_path / "checkpoints.db") == {f"{key}#w1-1.1"}
    log = server_log([tmp_path / "w1.notes"], app.approvals().values(),
                     tmp_path / "checkpoints.db", [(9.0, "w2-2")])
    kinds = [type(e).__name__ for e in log.entries]
    assert kinds.count("HandedOut") == 2
    assert [e.attempt for e in log.entries if isinstance(e, h.ResultDelivered)] == [
        f"{key}#w1-1.1"]
    assert {"TimerStarted", "ApprovalAnswered", "WorkerDeclaredLost"} <= set(kinds)
    assert len(log.run_ends) == 2


# -- what the engine declares --------------------------------------------------------------------


def test_the_engine_declares_properties_and_faults_the_harness_knows_each_with_a_reason(
        ) -> None:
    assert set(NOT_CHECKABLE) <= set(PROPERTIES)
    assert set(NO_TARGET) <= {kind.value for kind in NemesisKind}
    assert all(len(why) > 40 for why in (*NOT_CHECKABLE.values(), *NO_TARGET.values()))
    _check_targets(Limits(no_target=NO_TARGET))
    with pytest.raises(SpecError, match="cuts"):
        _check_targets(Limits(no_target={"cuts": "?"}))


# -- retries, on LangGraph's own mechanisms -----------------------------------------------------


async def _run_out(tmp_path: Path, variant: str, tool: str) -> tuple[list[str], Any]:
    """Run one call of `tool` on the variant's real graph, in this process, with the effect
    ledger out of reach: each attempt fails after it began. The attempts started, and what
    the run gave back."""
    from langgraph.checkpoint.memory import InMemorySaver

    app = store(tmp_path)
    app.set_policy(tool, ToolPolicy(EffectClass.parse(
        "read" if tool == "lookup_order" else "non_idempotent_write"), False), None)
    app.open_session("s", None)
    app.ask("s", "t1", "c1", tool, json.dumps({"order_id": "1"}), CONFIG)
    notes = Notes(tmp_path / "w.notes", "w1-1")
    gone = AsyncLedger("127.0.0.1", 1, token="x", workers=("w1-1",))
    found = mapping.VARIANTS[variant]
    ctx = RunContext("w1-1", app, gone, notes, {})
    kit = KITS[found.kit](ctx)
    graph = graphs.build(found, ScriptedChatModel(store=app, quiet=0.0), kit, app,
                         InMemorySaver(), CONFIG)
    try:
        result: Any = await graph.ainvoke({"messages": []},
                                          {"configurable": {"thread_id": "s"}})
    except Exception as error:
        result = error
    started = [line for line in (tmp_path / "w.notes").read_text().splitlines()
               if '"started"' in line]
    return started, result


@pytest.mark.parametrize("variant", ["create_agent", "tool_node"])
@pytest.mark.clause("TC-EFF-READ", "TC-REC-RETRY", "TC-KEY-2", "TC-EFF-NONIDEM")
def test_a_read_is_tried_max_attempts_times_and_a_write_once(tmp_path: Path,
                                                              variant: str) -> None:
    """create_agent's `ToolRetryMiddleware` and tool_node's `RetryPolicy` try a read whose
    attempts fail after they began max_attempts times, each with the same key; a single-attempt
    write gets one attempt and records outcome_unknown."""
    (tmp_path / "read").mkdir()
    (tmp_path / "write").mkdir()
    started, result = asyncio.run(_run_out(tmp_path / "read", variant, "lookup_order"))
    assert len(started) == CONFIG.max_attempts
    assert {json.loads(line)["key"] for line in started} == {"s/t1/c1"}
    if variant == "create_agent":
        [message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert mapping.record_of(message.status, str(message.content))[0] is S.FAILED
    else:
        assert isinstance(result, Exception), result
    started, result = asyncio.run(_run_out(tmp_path / "write", variant, "cancel_order"))
    assert len(started) == 1
    [message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert mapping.record_of(message.status, str(message.content))[0] is S.OUTCOME_UNKNOWN
