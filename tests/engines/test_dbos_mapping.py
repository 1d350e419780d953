"""The DBOS mapping's pure rules: the record each outcome gives, kept in the workflow's event as
JSON and read back unchanged, and the snapshot a team reads off its store and those records."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from atmostonce.engines.appstore import AppStore, CallRow
from atmostonce.engines.dbos import mapping
from atmostonce.engines.dbos.app import RunContext, records_of
from atmostonce.engines.dbos.client import snapshot_of
from atmostonce.engines.dbos.mapping import CallRecord
from atmostonce.engines.guards import JOURNAL, journal_guard, worker_of
from atmostonce.engines.notes import Notes, read_notes
from atmostonce.guard import Attempt, Statement
from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.tools import behaviours
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import AttemptEnd, Record, RejectReason
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


# -- the guarded variant -------------------------------------------------------------------


class _Killed(BaseException):
    """Stands for the process dying mid-run: nothing after it runs, the attempt never ends."""


@pytest.mark.clause("TC-AMO-2", "TC-REC-LOST")
def test_a_guarded_step_run_again_after_a_crash_records_outcome_unknown_and_never_runs_the_tool(
        tmp_path: Path) -> None:
    """DBOS runs a step again when its process died mid-run (D-1); through the guard, the run
    again finds the first attempt's intent without an end and records outcome_unknown, and the
    tool never starts a second time (no `started` note, no ledger request)."""
    guard = journal_guard(tmp_path / JOURNAL, ExecutorConfig())
    call = CallRow("s1/t1/c1", "s1", "t1", "c1", "cancel_order", "{}",
                   EffectClass.NON_IDEMPOTENT_WRITE, False, 0.0, 0)
    guard.ask(call.key, call.tool, call.arguments,
              Statement(ToolPolicy(call.effect, requires_approval=False)))

    async def dies(step: Attempt) -> str:
        raise _Killed

    with pytest.raises(_Killed):
        asyncio.run(guard.run(call.key, dies, lambda key, n: f"{key}#w1-100.{n}"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        ctx = RunContext("w2-200", AppStore(tmp_path / "app.db"),
                         AsyncLedger("127.0.0.1", 9, token="unused"), loop,
                         Notes(tmp_path / "w2.notes", "w2-200"), behaviours(), guard)
        record = ctx.guarded(guard, call)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5.0)
    assert (record.record, record.attempt) == (Record.OUTCOME_UNKNOWN, "s1/t1/c1#w1-100.1")
    assert read_notes(tmp_path / "w2.notes") == []
    assert [a.end for a in guard.attempts(call.key)] == [AttemptEnd.WORKER_LOST]
