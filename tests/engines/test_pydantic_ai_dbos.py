"""Pydantic AI on DBOS, the parts that decide a record: a turn's agent run (Pydantic AI's own
code, outside a workflow, where `DBOSDurability` is transparent) runs each call's tool body the
variant's way, defers exactly the calls whose kept policy wants approval, and each call's record
is read back from its tool return with the attempt that decided it. The variants under chaos
are judged in `test_dbos_chaos.py`."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pydantic_ai.durable_exec.dbos")

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied

from atmostonce.engines.appstore import CallRow
from atmostonce.engines.dbos import mapping as dbos_mapping
from atmostonce.engines.dbos.mapping import CallRecord
from atmostonce.engines.pydantic_ai import mapping
from atmostonce.engines.pydantic_ai.dbos_app import VARIANTS, TurnDeps, agent_of, records_of
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import OUTCOME_UNKNOWN_ERROR, Record, RejectReason, reject_text

E = EffectClass


def row(call_id: str, tool: str, effect: EffectClass, approval: bool = False) -> CallRow:
    return CallRow(f"s1/t1/{call_id}", "s1", "t1", call_id, tool, '{"order_id": "7"}', effect,
                   approval, 0.0, 0)


def ends(record: dict[str, CallRecord]) -> dict[str, tuple[Record, str]]:
    return {k: (r.record, r.attempt) for k, r in record.items()}


@pytest.mark.clause("TC-REC-1", "TC-REC-2")
def test_a_turn_records_each_calls_tool_return_with_the_attempt_that_ended_it() -> None:
    ran: list[tuple[str, str]] = []

    def run(call: CallRow) -> CallRecord:
        ran.append((call.call_id, call.arguments))
        attempt = f"{call.key}#w1.1"
        return {"c1": dbos_mapping.returned("order 7", attempt),
                "c2": dbos_mapping.tool_failed("out of stock", attempt),
                "c3": dbos_mapping.unknown(attempt)}[call.call_id]

    turn = [row("c1", "lookup_order", E.READ), row("c2", "refund", E.IDEMPOTENT_WRITE),
            row("c3", "cancel_order", E.NON_IDEMPOTENT_WRITE)]
    delivered: list[tuple[str, str]] = []
    agent = agent_of(VARIANTS["dbos_defaults"], run,
                     lambda key, record: delivered.append((key, record.attempt)))
    deps = TurnDeps({c.call_id: c for c in turn})
    prompt = mapping.script([(c.call_id, c.tool, c.arguments) for c in turn])
    result = asyncio.run(agent.run(prompt, deps=deps))
    found = records_of(turn, result.new_messages(), deps)
    assert sorted(ran) == [(c, '{"order_id": "7"}') for c in ("c1", "c2", "c3")]
    assert ends(found) == {"c1": (Record.SUCCEEDED, "s1/t1/c1#w1.1"),
                           "c2": (Record.FAILED, "s1/t1/c2#w1.1"),
                           "c3": (Record.OUTCOME_UNKNOWN, "s1/t1/c3#w1.1")}
    assert sorted(delivered) == [(f"s1/t1/{c}", f"s1/t1/{c}#w1.1") for c in ("c1", "c2", "c3")]
    assert found["c1"].text == "order 7"
    assert "out of stock" in found["c2"].error
    assert found["c3"].error == OUTCOME_UNKNOWN_ERROR


@pytest.mark.clause("TC-APR-3", "TC-REC-REJ")
def test_a_call_that_wants_approval_is_deferred_and_a_denial_is_its_rejection() -> None:
    ran: list[str] = []

    def run(call: CallRow) -> CallRecord:
        ran.append(call.call_id)
        return dbos_mapping.returned("done", f"{call.key}#w1.1")

    turn = [row("c1", "lookup_order", E.READ), row("c2", "cancel_order", E.UNCLASSIFIED, True)]
    agent = agent_of(VARIANTS["dbos_steps"], run, lambda key, record: None)
    deps = TurnDeps({c.call_id: c for c in turn})
    prompt = mapping.script([(c.call_id, c.tool, c.arguments) for c in turn])
    first = asyncio.run(agent.run(prompt, deps=deps))
    assert isinstance(first.output, DeferredToolRequests)
    assert [p.tool_call_id for p in first.output.approvals] == ["c2"]
    assert ran == ["c1"]
    denial = reject_text(RejectReason.PERSON)
    answers = DeferredToolResults(approvals={"c2": ToolDenied(denial)})
    second = asyncio.run(agent.run(deps=deps, message_history=first.all_messages(),
                                   deferred_tool_results=answers))
    found = records_of(turn, first.new_messages() + second.new_messages(), deps)
    assert ran == ["c1"]
    assert ends(found) == {"c1": (Record.SUCCEEDED, "s1/t1/c1#w1.1"),
                           "c2": (Record.REJECTED, "")}
    assert found["c2"].error == denial
