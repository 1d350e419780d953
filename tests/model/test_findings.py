"""Findings F-6 and F-7 and both choices of D-4: what the model says about the page's advice
for the double run, about the outcome_unknown record of a cancelled single attempt (D-4's
default), and about the failed record of D-4's other choice, whose write lands after it."""

from __future__ import annotations

import pytest

from atmostonce.model import findings
from atmostonce.model import layout as s
from atmostonce.model.choices import ModelChoices
from atmostonce.model.explorer import Explorer
from atmostonce.model.system import System
from atmostonce.spec.clauses import FindingId
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.step_kinds import StepKind


def claims_of(finding: str) -> dict[str, findings.Claim]:
    """The finding's claims by their letter."""
    return {c.id.removeprefix(finding): c for c in findings.establish()
            if c.id.startswith(finding)}


@pytest.mark.clause("F-6", "D-6", "TC-AMO-5", "TC-KEY-3")
def test_every_claim_of_finding_f6_holds() -> None:
    claims = claims_of(FindingId.F_6)
    assert set(claims) == set("abcde")
    for claim in claims.values():
        assert claim.holds, f"{claim.id}: {claim.statement}"
    assert claims["a"].trace is not None
    assert claims["a"].trace.steps[-1].action["action"] == StepKind.APPLY
    assert claims["b"].trace is None


@pytest.mark.clause("D-4", "TC-REC-EXHAUST-OTHER", "TC-RCN-FIND", "TC-AMO-3")
def test_d4_by_default_a_cancelled_single_attempt_is_unknown_and_reconciled() -> None:
    claims = claims_of("D-4")
    assert set(claims) == set("ab")
    for claim in claims.values():
        assert claim.holds, f"{claim.id}: {claim.statement}"
        assert not claim.config.cancel_records_failed
    trace = claims["a"].trace
    assert trace is not None
    actions = [step.action["action"] for step in trace.steps]
    assert actions[:4] == [StepKind.ASK, StepKind.HAND, StepKind.GO, StepKind.TIME_OUT]
    assert "call 0 record: None -> outcome_unknown" in trace.steps[3].changes
    assert claims["b"].trace is None


@pytest.mark.clause("F-7", "D-4", "TC-REC-FAIL", "TC-AMO-3")
def test_f7_the_shortest_trace_records_failed_then_the_write_lands() -> None:
    claims = claims_of(FindingId.F_7)
    assert set(claims) == set("abc")
    for claim in claims.values():
        assert claim.holds, f"{claim.id}: {claim.statement}"
        assert claim.config.cancel_records_failed
    trace = claims["a"].trace
    assert trace is not None
    actions = [step.action["action"] for step in trace.steps]
    assert actions == [StepKind.ASK, StepKind.HAND, StepKind.GO, StepKind.TIME_OUT, StepKind.APPLY]
    timed_out = trace.steps[3].changes
    assert "call 0 record: None -> failed" in timed_out
    assert "call 0 error: None -> may_still_be_running" in timed_out
    assert any("effects applied 0 -> 1" in change for change in trace.steps[4].changes)
    assert claims["b"].trace is None


@pytest.mark.clause("F-7", "D-20", "TC-RCN-ONCE")
def test_f7_reconcile_including_cancelled_calls_reports_them_and_a_blind_job_twice() -> None:
    config = findings._FAILS.with_(reconcile_cancelled=True)
    system = System(config)
    reported = Explorer(system, stop_at_first=False, goal=lambda st: any(
        c[s.CS] == s.C_FAILED and c[s.REP] == 1 for c in system.calls_of(st)))
    reported.run()
    assert reported.goal_found is not None
    blind = System(config, ModelChoices(reconcile_reads_history=False))
    result = Explorer(blind, stop_at_first=True).run()
    assert PropertyId.E_RECONCILE_ONCE in {v.property for v in result.violations}
