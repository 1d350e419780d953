"""What the guarded variant's server log says, from the guard's journal: each intent is a
hand-out (D-5), and each result a tool gave is delivered when the journal kept it, whatever
the checkpoints hold by then; a record the guard settled without a run (outcome_unknown) is no
delivery. Chaos found the need: a process killed between the journal's commit of a tool's
failure and the checkpoint's write had its result judged as lost with it (seed 3)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

from atmostonce.check.history import entries as h
from atmostonce.engines.guards import hand_outs, results_delivered, worker_of
from atmostonce.engines.langgraph.server_log import server_log
from atmostonce.engines.notes import Notes
from atmostonce.guard import Attempt, Guard, Statement, ToolFailed
from atmostonce.spec.policy import EffectClass, ToolPolicy


async def _returns(attempt: Attempt) -> str:
    return "ok"


async def _fails(attempt: Attempt) -> str:
    raise ToolFailed("no such order")


async def _lost(attempt: Attempt) -> str:
    raise ConnectionError("the process lost the service")


def test_the_journal_gives_the_hand_outs_and_the_deliveries(tmp_path: Path) -> None:
    guard = Guard(tmp_path / "guard.db")
    write = Statement(ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False))
    for call, tool in (("c1", _returns), ("c2", _fails), ("c3", _lost)):
        key = f"s/t1/{call}"
        guard.ask(key, "refund", "{}", write)
        asyncio.run(guard.run(key, tool, lambda k, n: f"{k}#w1-7.{n}"))
    assert worker_of("s/t1/c1#w1-7.1") == "w1-7"
    assert [(e.worker, e.attempt, e.key) for e in hand_outs(guard)
            if isinstance(e, h.HandedOut)] == [("w1-7", f"s/t1/c{n}#w1-7.1", f"s/t1/c{n}")
                                               for n in (1, 2, 3)]
    delivered = results_delivered(guard)
    assert [(e.attempt, e.ok) for e in delivered if isinstance(e, h.ResultDelivered)] == [
        ("s/t1/c1#w1-7.1", True), ("s/t1/c2#w1-7.1", False)]
    notes = Notes(tmp_path / "w1.notes", "w1-7")
    notes.note("delivering", attempt="s/t1/c3#w1-7.1", key="s/t1/c3", of="w1-7", ok=False)
    log = server_log([tmp_path / "w1.notes"], [], tmp_path / "checkpoints.db", [],
                     hand_outs(guard), delivered)
    assert [json.loads(line)["type"] for line in
            (tmp_path / "w1.notes").read_text().splitlines()] == ["delivering"]
    assert sorted(e.attempt for e in log.entries if isinstance(e, h.ResultDelivered)) == [
        "s/t1/c1#w1-7.1", "s/t1/c2#w1-7.1"]
