"""A call keeps the policy that applied when the model asked for it; resolution follows the
precedence of D-1, and every tool gets a policy."""

from __future__ import annotations

import pytest

from atmostonce.spec.policy import EffectClass, ToolHints
from atmostonce.spec.protocol import OpenSession, SetPolicy, TimerKind
from atmostonce.spec.session import ToolCallStatus
from tests.executor.driver import Driver

READ = EffectClass.READ
IDEM = EffectClass.IDEMPOTENT_WRITE
NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE
UNCL = EffectClass.UNCLASSIFIED


@pytest.mark.clause("TC-SNAP-1", "TC-SNAP-2", "TC-POL-2")
def test_policy_change_reaches_only_later_calls() -> None:
    d = Driver()
    d.open()
    d.policy("refund", NONIDEM, requires_approval=False)
    before = d.ask("refund", "c1")
    d.policy("refund", READ)
    after = d.ask("refund", "c2")

    assert d.poll("w1") is not None
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w1")
    assert d.view(before).status is ToolCallStatus.OUTCOME_UNKNOWN

    go = d.poll("w2")
    assert go is not None
    assert go.key == after
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w2")
    assert d.view(after).status is ToolCallStatus.RUNNING
    assert d.pending(TimerKind.RETRY_BACKOFF, after)


@pytest.mark.clause("TC-SNAP-1", "TC-APR-3")
def test_a_waiting_call_keeps_waiting_when_its_tool_stops_asking() -> None:
    d = Driver()
    d.open()
    d.policy("lookup", READ, requires_approval=True)
    key = d.ask("lookup")
    d.policy("lookup", READ, requires_approval=False)
    assert d.view(key).status is ToolCallStatus.AWAITING_APPROVAL
    assert d.poll("w1") is None


@pytest.mark.clause("TC-SNAP-1")
def test_the_ask_entry_persists_the_effective_policy() -> None:
    d = Driver()
    d.open(default=IDEM)
    d.ask("anything")
    (ask,) = d.entries("ask")
    assert (ask["effect"], ask["requires_approval"], ask["source"]) == (
        "idempotent_write", False, "session_default")


@pytest.mark.clause("TC-APR-5", "D-1", "D-11", "TC-POL-1", "TC-EFF-UNCL")
@pytest.mark.parametrize(
    ("effect", "hints", "default", "waits", "source"),
    [
        (NONIDEM, ToolHints(read_only=True), READ, True, "tool_policy"),
        (None, ToolHints(read_only=True), NONIDEM, False, "framework_metadata"),
        (None, ToolHints(read_only=False), READ, True, "framework_metadata"),
        (None, ToolHints(destructive=True), READ, False, "session_default"),
        (None, None, None, True, "fallback"),
    ],
)
def test_policy_beats_hints_beat_session_default(
    effect: EffectClass | None, hints: ToolHints | None, default: EffectClass | None,
    waits: bool, source: str,
) -> None:
    d = Driver()
    d.open(default=default)
    d.policy("tool", effect, hints=hints)
    key = d.ask("tool")
    expected = ToolCallStatus.AWAITING_APPROVAL if waits else ToolCallStatus.RUNNING
    assert d.view(key).status is expected
    assert d.entries("ask")[0]["source"] == source


@pytest.mark.clause("TC-POL-1", "TC-EFF-UNCL")
def test_a_tool_nobody_registered_is_unclassified_in_an_unopened_session() -> None:
    d = Driver()
    key = d.ask("mystery", session="fresh")
    assert d.view(key, "fresh").status is ToolCallStatus.AWAITING_APPROVAL
    assert d.entries("ask")[0]["effect"] == "unclassified"
    assert d.entries("session")[0]["session_id"] == "fresh"


@pytest.mark.clause("D-22", "D-1")
def test_d22_a_session_keeps_its_default_as_a_floor_also_after_a_restart() -> None:
    d = Driver()
    d.policy("lookup", hints=ToolHints(read_only=True))
    d.send(OpenSession(d.now, "trusting", NONIDEM))
    d.send(OpenSession(d.now, "wary", NONIDEM, hints_may_lower=False))
    trusted = d.ask("lookup", "c1", session="trusting")
    wary = d.ask("lookup", "c1", session="wary")
    assert d.view(trusted, "trusting").status is ToolCallStatus.RUNNING
    assert d.view(wary, "wary").status is ToolCallStatus.AWAITING_APPROVAL
    assert [e.get("hints_may_lower") for e in d.entries("session")] == [None, False]
    d.restart()
    later = d.ask("lookup", "c2", session="wary")
    assert d.view(later, "wary").status is ToolCallStatus.AWAITING_APPROVAL
    again = d.ask("lookup", "c2", session="trusting")
    assert d.view(again, "trusting").status is ToolCallStatus.RUNNING


@pytest.mark.clause("TC-APR-EXAMPLE")
def test_every_call_of_the_quick_starts_cancel_order_waits_for_approval() -> None:
    from atmostonce.runtime.tools import TOOLS

    d = Driver()
    d.open()
    policy = TOOLS["cancel_order"].policy
    assert policy is not None
    d.send(SetPolicy(d.now, "cancel_order", policy))
    keys = [d.ask("cancel_order", f"c{i}") for i in range(3)]
    assert {d.view(k).status for k in keys} == {ToolCallStatus.AWAITING_APPROVAL}
    assert d.poll("w1") is None
