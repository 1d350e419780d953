"""The exhaustive check at the default bound: every property of DESIGN holds or is witnessed."""

from __future__ import annotations

import pytest

from atmostonce.model import check
from atmostonce.model.check import DEFAULT, CheckReport
from atmostonce.model.properties import Properties
from atmostonce.model.system import System
from atmostonce.spec.properties import Kind, PropertyId, of_kind
from atmostonce.spec.step_kinds import StepKind


@pytest.fixture(scope="module")
def report() -> CheckReport:
    return check.run(DEFAULT, with_findings=False)


@pytest.mark.slow
@pytest.mark.clause("TC-REC-1", "TC-REC-SUCC", "TC-REC-FAIL", "TC-REC-UNK", "TC-REC-NOTRUN",
                    "TC-REC-EXHAUST-READ", "TC-REC-EXHAUST-OTHER", "TC-KEY-1", "TC-AMO-1",
                    "TC-AMO-2", "TC-AMO-3", "TC-APR-2", "TC-APR-3", "TC-SNAP-1", "TC-SNAP-2",
                    "D-5", "D-7", "D-8", "D-9", "D-10", "D-12", "TC-RCN-ONCE")
def test_every_always_property_holds_on_every_reachable_state(report: CheckReport) -> None:
    assert report.result.complete
    assert report.violations == []
    assert report.result.quiescent > 0


@pytest.mark.slow
@pytest.mark.clause("TC-AMO-4", "TC-REC-LOST", "TC-REC-RETRY", "TC-RCN-ASK", "D-8",
                    "TC-REC-REJ")
def test_every_sometimes_property_is_witnessed(report: CheckReport) -> None:
    wanted = {p.id for p in of_kind(Kind.SOMETIMES)}
    assert set(report.result.witnesses) == wanted
    assert report.result.unwitnessed == []


@pytest.mark.slow
@pytest.mark.clause("TC-AMO-3", "TC-AMO-4")
def test_the_documented_double_run_is_a_cancelled_run_and_a_later_call(
    report: CheckReport,
) -> None:
    trace = report.double_run
    assert trace is not None
    actions = [step.action["action"] for step in trace.steps]
    assert StepKind.TIME_OUT in actions
    assert actions.index(StepKind.TIME_OUT) < actions.index(StepKind.REASK)
    assert actions[-1] == StepKind.GO


def test_the_default_bound_is_not_trivially_small(report: CheckReport) -> None:
    """Its speed is measured by `benchmarks/explore.py`, never by a timed test: on a loaded
    machine a wall-clock budget fails for reasons that are not the explorer's."""
    assert report.result.states > 100_000
    assert report.result.complete


def test_the_live_display_counts_towards_the_default_bounds_true_state_count(
        report: CheckReport) -> None:
    """`check` and `verify` show the time left against DEFAULT_STATES: it must be the count
    the explorer reaches, and no other bound claims a total it does not know."""
    assert check.states_expected(DEFAULT) == report.result.states == check.DEFAULT_STATES
    assert check.states_expected(DEFAULT, max_states=500) == 500
    assert check.states_expected(DEFAULT.with_(workers=1)) is None
    assert check.states_expected(DEFAULT.with_(workers=1), max_states=500) == 500


def test_a_bound_too_small_reports_what_it_cannot_witness() -> None:
    config = DEFAULT.with_(faults=0, reasks=0, policy_changes=0)
    report = check.run(config, with_findings=False)
    assert report.result.violations == []
    assert report.ok == (not Properties(System(config)).wanted - set(report.result.witnesses))
    assert PropertyId.S_DOUBLE_RUN not in Properties(System(config)).wanted


def test_check_stops_with_an_incomplete_verdict_at_max_states() -> None:
    report = check.run(DEFAULT, max_states=500, with_findings=False)
    assert not report.result.complete
    assert not report.ok
