"""The DBOS mapping's pure rules: the record each outcome gives, kept in the workflow's event as
JSON and read back unchanged, and the snapshot a team reads off its store and those records."""

from __future__ import annotations

import pytest

pytest.importorskip("dbos")

from atmostonce.engines.appstore import CallRow
from atmostonce.engines.dbos import mapping
from atmostonce.engines.dbos.app import records_of, worker_of
from atmostonce.engines.dbos.client import snapshot_of
from atmostonce.engines.dbos.mapping import CallRecord
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import Record, RejectReason
from atmostonce.spec.session import MessageRole, ToolCallStatus


def _call(call_id: str, approval: bool = False) -> CallRow:
    return CallRow(f"s/t1/{call_id}", "s", "t1", call_id, "lookup_order", "{}",
                   EffectClass.READ, approval, 1.0, 1)


@pytest.mark.parametrize("record", [
    mapping.returned("order 1 shipped", "s/t1/c1#w1-9.1"),
    mapping.tool_failed("no such order", "s/t1/c1#w1-9.1"),
    mapping.rejected(RejectReason.DEADLINE),
    mapping.unknown("s/t1/c1#w1-9.2"),
    mapping.exhausted(True, ""),
    mapping.exhausted(False, ""),
])
def test_a_record_reads_back_from_its_event_unchanged(record: CallRecord) -> None:
    assert records_of({"c1": record.as_json()}) == {"c1": record}


def test_each_outcome_gives_the_pages_record() -> None:
    assert mapping.returned("ok", "a").record is Record.SUCCEEDED
    assert mapping.returned("ok", "a").text == "ok"
    assert mapping.tool_failed("boom", "a").record is Record.FAILED
    assert mapping.rejected(RejectReason.PERSON).record is Record.REJECTED
    assert mapping.unknown("a").record is Record.OUTCOME_UNKNOWN
    assert mapping.exhausted(True, "").record is Record.FAILED
    assert mapping.exhausted(False, "").record is Record.OUTCOME_UNKNOWN


def test_no_event_yet_is_no_record() -> None:
    assert records_of(None) == {}


def test_an_attempt_names_the_worker_that_ran_it() -> None:
    assert worker_of("s/t1/c1#w12-4242.3") == "w12-4242"


def test_the_snapshot_reads_records_then_the_inbox() -> None:
    """A call with a record shows it and its tool result in the history; one the inbox waits
    for awaits approval; any other runs; user messages close the history."""
    done, waiting, running = _call("c1"), _call("c2", approval=True), _call("c3")
    record = mapping.returned("order 1 shipped", "s/t1/c1#w1-9.1")
    snapshot = snapshot_of("s", [done, waiting, running], {waiting.key}, {"c1": record},
                           ["what happened?"])
    assert [v.status for v in snapshot.tool_calls] == [
        ToolCallStatus.SUCCEEDED, ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.RUNNING]
    assert [(m.role, m.text, m.tool_output) for m in snapshot.messages] == [
        (MessageRole.TOOL, "", "order 1 shipped"), (MessageRole.USER, "what happened?", "")]
