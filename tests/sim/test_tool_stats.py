"""Per-tool statistics of a scenario: the time to record counts from the go-ahead, the wait for
a person is counted apart from it, and failed and rejected records are split by the reason
their error gives, on calls written out by hand."""

from __future__ import annotations

from atmostonce.check.history.checkers import CallSummary
from atmostonce.sim.tool_stats import UNNAMED, ToolTotals, add_run, combined
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import FailureKind, RejectReason, failure_text, reject_text
from atmostonce.spec.session import ToolCallStatus

IDEM = EffectClass.IDEMPOTENT_WRITE


def call(key: str, status: ToolCallStatus | None, asked: float, recorded: float | None,
         handed: float | None, approval: float | None = None, error: str = "") -> CallSummary:
    return CallSummary(key, "refund", IDEM, status, asked, recorded, 1 if handed else 0,
                       1 if handed else 0, 1 if handed else 0, handed, approval, error)


def totals(*calls: CallSummary) -> ToolTotals:
    found: dict[str, ToolTotals] = {}
    add_run(found, ["refund"], calls, (), {})
    return found["refund"]


def test_time_to_record_counts_from_the_go_ahead_and_the_wait_for_a_person_apart() -> None:
    """Asked at 10, approved at 250, handed out at 251, recorded at 254: 3 s to record after
    the go-ahead, 240 s waiting for a person; never 244 s to record."""
    t = totals(call("a", ToolCallStatus.SUCCEEDED, 10.0, 254.0, 251.0, 250.0))
    assert t.times == [3.0]
    assert t.approval_waits == [240.0]
    assert t.approval_ends["approved"] == 1
    assert t.no_go_ahead == 0


def test_an_outcome_unknown_counts_from_its_go_ahead_too() -> None:
    t = totals(call("a", ToolCallStatus.OUTCOME_UNKNOWN, 0.0, 45.0, 15.0))
    assert t.unknown_times == [30.0]
    assert t.times == [30.0]
    assert t.approval_waits == []


def test_a_call_no_attempt_of_reached_a_worker_has_no_time_to_record() -> None:
    """A rejected call, or one failed before any hand-out, never had a go-ahead: it is counted
    apart, and its wait for a person ends at the deadline or the answer."""
    t = totals(
        call("a", ToolCallStatus.REJECTED, 0.0, 300.0, None, 300.0,
             reject_text(RejectReason.DEADLINE)),
        call("b", ToolCallStatus.REJECTED, 5.0, 25.0, None, 25.0,
             reject_text(RejectReason.PERSON)),
        call("c", ToolCallStatus.FAILED, 0.0, 30.0, None, None,
             failure_text(FailureKind.DID_NOT_RUN)),
        call("d", None, 0.0, None, None))
    assert t.times == []
    assert t.no_go_ahead == 3
    assert sorted(t.approval_waits) == [20.0, 300.0]
    assert t.approval_ends == {"approved": 0, "person": 1, "deadline": 1, UNNAMED: 0}
    assert t.rejected == {"person": 1, "deadline": 1, UNNAMED: 0}
    assert t.failed["did_not_run"] == 1
    assert t.records["none"] == 1


def test_failed_records_split_by_the_kind_their_error_names() -> None:
    errors = [failure_text(FailureKind.TOOL_ERROR, "card declined"),
              failure_text(FailureKind.TOOL_ERROR),
              failure_text(FailureKind.MAY_HAVE_RUN),
              failure_text(FailureKind.MAY_STILL_BE_RUNNING),
              "an executor's own wording"]
    t = totals(*(call(str(i), ToolCallStatus.FAILED, 0.0, 9.0, 1.0, None, error)
                 for i, error in enumerate(errors)))
    assert t.failed == {"did_not_run": 0, "tool_error": 2, "may_have_run": 1,
                        "may_still_be_running": 1, UNNAMED: 1}
    assert sum(t.failed.values()) == t.records["failed"] == 5


def test_combined_adds_every_split_and_every_time() -> None:
    one = totals(call("a", ToolCallStatus.SUCCEEDED, 0.0, 9.0, 1.0, 0.5),
                 call("b", ToolCallStatus.FAILED, 0.0, 9.0, 1.0, None,
                      failure_text(FailureKind.TOOL_ERROR)))
    both = combined({"x": one, "y": one})
    assert both.calls == 4
    assert both.failed["tool_error"] == 2
    assert both.approval_ends["approved"] == 2
    assert sorted(both.times) == [8.0] * 4
    assert both.approval_waits == [0.5, 0.5]
