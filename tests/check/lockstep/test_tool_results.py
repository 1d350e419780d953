"""Conformance compares each call's tool result in the session history with its record after
every step (TC-REC-2): an executor whose tool result says something else is caught."""

from __future__ import annotations

from dataclasses import replace

import pytest

from atmostonce.check.lockstep.conformance import Lockstep
from atmostonce.check.lockstep.state import Disagreement
from atmostonce.executor import attempts, reference
from atmostonce.executor.views import tool_message
from atmostonce.model.check import DEFAULT
from atmostonce.model.layout import Label
from atmostonce.spec.step_kinds import StepKind


def drive(steps: list[str]) -> Lockstep:
    """Take, step by step, the first enabled step of each kind named."""
    lockstep = Lockstep(DEFAULT, reference)
    for kind in steps:
        label: Label = next(lab for lab in lockstep.enabled() if lab[0] == kind)
        lockstep.step(label)
    return lockstep


def test_the_reference_tool_results_agree_through_a_failed_run() -> None:
    drive([StepKind.ASK, StepKind.HAND, StepKind.GO, StepKind.FINISH_FAIL])


@pytest.mark.clause("TC-REC-2")
def test_a_tool_result_that_drops_the_error_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attempts, "tool_message", lambda call, outcome, output: tool_message(
        call, replace(outcome, error=""), output))
    with pytest.raises(Disagreement, match="its tool result reads"):
        drive([StepKind.ASK, StepKind.HAND, StepKind.GO, StepKind.FINISH_FAIL])
