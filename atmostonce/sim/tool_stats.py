"""Outcome statistics per tool, summed over the runs of a scenario: how its calls ended (a failed
or rejected record split by the reason its error gives), how many ran alongside a run of an
earlier call that the executor had given up on (the documented double run, TC-AMO-4), how many
had their write applied more than once by the service, the retries, the time from the go-ahead
(the first attempt handed to a worker, D-5) to the record, and apart from it the wait for a
person (from the ask to the answer or the deadline): measured from the ask, a tool that waits
for approval would show only how long people take."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from atmostonce.check.history.checkers import CallSummary
from atmostonce.check.history.state import DoubleRun
from atmostonce.sim.stats import RECORDS, percentiles, wilson
from atmostonce.spec.records import FailureKind, RejectReason, failure_kind, reject_reason
from atmostonce.spec.session import ToolCallStatus

NO_RECORD = "none"
OUTCOMES = (*RECORDS, NO_RECORD)
UNNAMED = "unnamed"
"""A failed or rejected record whose error opens with none of the spec's texts."""
FAILURE_REASONS = (*(k.value for k in FailureKind), UNNAMED)
REJECT_REASONS = (*(r.value for r in RejectReason), UNNAMED)
APPROVED = "approved"
APPROVAL_ENDS = (APPROVED, *REJECT_REASONS)
"""How a wait for a person ended: approved, or rejected for a reason of `RejectReason`."""

Times = tuple[float, float, float]
"""Mean, median and 99th percentile seconds."""


@dataclass
class ToolTotals:
    calls: int = 0
    records: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    failed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAILURE_REASONS, 0))
    """Failed records by the `FailureKind` their error names."""
    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REJECT_REASONS, 0))
    """Rejected records by the `RejectReason` their error names."""
    double_runs: int = 0
    """Calls that ran while a run of an earlier call of the tool, given up on, still went on."""
    repeated_effects: int = 0
    """Calls whose write the service applied more than once."""
    retries: int = 0
    """Attempts beyond each call's first."""
    times: list[float] = field(default_factory=list)
    """Seconds from the go-ahead to the record, per recorded call that had a go-ahead."""
    unknown_times: list[float] = field(default_factory=list)
    """The same, for the calls recorded outcome_unknown: how long until the model knew that
    nobody knows."""
    no_go_ahead: int = 0
    """Recorded calls that no attempt of reached a worker (rejected, or failed unrun)."""
    approval_waits: list[float] = field(default_factory=list)
    """Seconds from the ask to the answer or the deadline, per call whose wait ended."""
    approval_ends: dict[str, int] = field(default_factory=lambda: dict.fromkeys(APPROVAL_ENDS, 0))

    def share(self, hits: int) -> dict[str, float | int]:
        """`hits` of this tool's calls, as a share with its 95% Wilson interval."""
        low, high = wilson(hits, self.calls)
        return {"count": hits, "share": hits / self.calls if self.calls else 0.0,
                "low": low, "high": high}

    def time_to_record(self) -> Times | None:
        """Seconds from the go-ahead to the record, if any call had both."""
        return percentiles(self.times) if self.times else None

    def time_to_unknown(self) -> Times | None:
        """The same for the calls recorded outcome_unknown, if any."""
        return percentiles(self.unknown_times) if self.unknown_times else None

    def approval_wait(self) -> Times | None:
        """Seconds from the ask to the answer or the deadline, if any wait ended."""
        return percentiles(self.approval_waits) if self.approval_waits else None


def add_run(totals: dict[str, ToolTotals], tools: Iterable[str],
            summaries: Iterable[CallSummary], double_runs: Iterable[DoubleRun],
            applied: Mapping[str, int]) -> None:
    """Add one run's calls to `totals`, by tool; `applied` counts the service's writes by
    idempotency key (a call's key)."""
    for name in tools:
        totals.setdefault(name, ToolTotals())
    doubled = {(d.tool, d.second) for d in double_runs}
    for s in summaries:
        t = totals.setdefault(s.tool, ToolTotals())
        t.calls += 1
        t.records[s.status.value if s.status is not None else NO_RECORD] += 1
        t.retries += max(0, s.attempts - 1)
        rejection: str | None = None
        if s.status is ToolCallStatus.FAILED:
            kind = failure_kind(s.error)
            t.failed[kind.value if kind is not None else UNNAMED] += 1
        elif s.status is ToolCallStatus.REJECTED:
            reason = reject_reason(s.error)
            rejection = reason.value if reason is not None else UNNAMED
            t.rejected[rejection] += 1
        if s.recorded_at is not None:
            if s.handed_at is None:
                t.no_go_ahead += 1
            else:
                t.times.append(s.recorded_at - s.handed_at)
                if s.status is ToolCallStatus.OUTCOME_UNKNOWN:
                    t.unknown_times.append(s.recorded_at - s.handed_at)
        if s.approval_at is not None:
            t.approval_waits.append(s.approval_at - s.asked_at)
            t.approval_ends[rejection or APPROVED] += 1
        if (s.tool, s.key) in doubled:
            t.double_runs += 1
        if applied.get(s.key, 0) > 1:
            t.repeated_effects += 1


def combined(totals: Mapping[str, ToolTotals]) -> ToolTotals:
    """Every tool's calls as one."""
    out = ToolTotals()
    for t in totals.values():
        out.calls += t.calls
        for mine, theirs in ((out.records, t.records), (out.failed, t.failed),
                             (out.rejected, t.rejected), (out.approval_ends, t.approval_ends)):
            for name, n in theirs.items():
                mine[name] += n
        out.double_runs += t.double_runs
        out.repeated_effects += t.repeated_effects
        out.retries += t.retries
        out.times += t.times
        out.unknown_times += t.unknown_times
        out.no_go_ahead += t.no_go_ahead
        out.approval_waits += t.approval_waits
    return out
