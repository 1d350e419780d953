"""The pure rules behind the Flow's history step of reconcile (TC-RCN-HISTORY, D-30) and a
call's own approval deadline (D-32)."""

from __future__ import annotations

import math

import pytest

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy, choose_deadline
from atmostonce.spec.reconcile import NEVER_REACHED_FINDING, history_finding, never_reached
from atmostonce.spec.records import AttemptEnd
from atmostonce.spec.session import AgentSnapshot, AttemptView, ToolCallStatus, ToolCallView

UNKNOWN = ToolCallStatus.OUTCOME_UNKNOWN
QUEUED_ONLY = AttemptView(1, 0.0, "", None, None, 3.0, AttemptEnd.NOT_REACHED)
HANDED = AttemptView(1, 0.0, "w1", 1.0, None, 3.0, AttemptEnd.WORKER_LOST)


def view(attempts: tuple[AttemptView, ...], history: bool = True) -> ToolCallView:
    return ToolCallView("t", "c", "tool", UNKNOWN, "", "s/t/c", attempts=attempts,
                        history=history)


@pytest.mark.clause("TC-RCN-HISTORY", "D-30", "D-5")
def test_only_a_shown_history_without_a_hand_out_says_the_tool_did_not_run() -> None:
    assert never_reached(view((QUEUED_ONLY,)))
    assert never_reached(view(()))
    assert not never_reached(view((QUEUED_ONLY, HANDED)))
    assert not never_reached(view((HANDED,)))
    assert not never_reached(view((), history=False))  # an engine that shows no history


@pytest.mark.clause("TC-RCN-HISTORY", "D-30")
def test_the_history_finding_names_the_call_by_its_key() -> None:
    snapshot = AgentSnapshot("s", (view((QUEUED_ONLY,)),), ())
    assert history_finding(snapshot, "s/t/c") == NEVER_REACHED_FINDING
    assert history_finding(snapshot, "s/t/other") is None
    reached = AgentSnapshot("s", (view((HANDED,)),), ())
    assert history_finding(reached, "s/t/c") is None


@pytest.mark.clause("D-32")
def test_the_ask_then_the_policy_then_the_setting_give_the_deadline() -> None:
    assert choose_deadline(5.0, 60.0, 300.0) == 5.0
    assert choose_deadline(None, 60.0, 300.0) == 60.0
    assert choose_deadline(None, None, 300.0) == 300.0


@pytest.mark.clause("D-32", "TC-APR-1")
@pytest.mark.parametrize("bad", [-1.0, math.inf, math.nan, "60", True])
def test_a_policy_refuses_a_deadline_that_is_no_number_of_seconds(bad: object) -> None:
    with pytest.raises(SpecError, match="approval_deadline"):
        ToolPolicy.of("read", None, bad)
    with pytest.raises(SpecError, match="approval_deadline"):
        ToolPolicy(EffectClass.READ, None, bad)  # type: ignore[arg-type]
