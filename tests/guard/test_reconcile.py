"""Reconcile over the guard's journal: the runtime's `report_unknown_outcomes`, unchanged,
finds every call the guard recorded outcome_unknown and reports each once, however often it
runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from atmostonce.guard import Attempt, Guard, JournalSessions, Statement
from atmostonce.runtime.reconcile import as_check, report_unknown_outcomes
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.reconcile import report_keys_in
from atmostonce.spec.session import ToolCallStatus


async def _lost(attempt: Attempt) -> str:
    raise ConnectionError("the worker lost the service mid-call")


async def _returns(attempt: Attempt) -> str:
    return "sent"


@pytest.mark.clause("TC-RCN-FIND", "TC-RCN-KEY", "TC-RCN-TELL", "TC-RCN-ONCE")
def test_reconcile_reports_each_outcome_unknown_call_once(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db")
    policy = Statement(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False))
    for call, tool in (("c1", _lost), ("c2", _returns)):
        guard.ask(f"s/t1/{call}", "refund", '{"order": 7}', policy)
        asyncio.run(guard.run(f"s/t1/{call}", tool))
    delivered: list[tuple[str, str]] = []

    async def deliver(session_id: str, text: str) -> bool:
        delivered.append((session_id, text))
        return True

    sessions = JournalSessions(guard, deliver)
    check = as_check(lambda key, arguments: f"the service holds no refund {arguments}")
    first = asyncio.run(report_unknown_outcomes(sessions, "s", check, "the refund service"))
    again = asyncio.run(report_unknown_outcomes(JournalSessions(Guard(tmp_path / "guard.db"),
                                                                deliver), "s", check))
    assert [r.key for r in first.reports] == ["s/t1/c1"]
    assert (first.unknown, again.reports, again.already_reported) == (1, [], 1)
    assert [report_keys_in(text) for _, text in delivered] == [["s/t1/c1"]]
    assert '{"order": 7}' in delivered[0][1]
    snapshot = asyncio.run(sessions.get_agent_snapshot("s"))
    assert [v.status for v in snapshot.tool_calls] == [ToolCallStatus.OUTCOME_UNKNOWN,
                                                       ToolCallStatus.SUCCEEDED]
    assert all(a.reached for a in snapshot.tool_calls[0].attempts)


def test_a_report_the_framework_refused_is_not_kept(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db")
    guard.ask("s/t1/c1", "refund", "{}", Statement(ToolPolicy(EffectClass.UNCLASSIFIED, False)))
    asyncio.run(guard.run("s/t1/c1", _lost))

    async def refuse(session_id: str, text: str) -> bool:
        return False

    run = asyncio.run(report_unknown_outcomes(JournalSessions(guard, refuse), "s",
                                              as_check(lambda key, arguments: "unknown")))
    assert run.interrupted is not None
    with guard.journal.reading() as tx:
        assert tx.reports("s") == []
