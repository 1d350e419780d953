"""Outcome statistics per tool, summed over the runs of a scenario: how its calls ended, how
many ran alongside a run of an earlier call that the executor had given up on (the documented
double run, TC-AMO-4), how many had their write applied more than once by the service, the
retries and the time from ask to record."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from atmostonce.check.history.checkers import CallSummary
from atmostonce.check.history.state import DoubleRun
from atmostonce.sim.members import OUTCOME_UNKNOWN
from atmostonce.sim.stats import RECORDS, percentiles, wilson

NO_RECORD = "none"
OUTCOMES = (*RECORDS, NO_RECORD)


@dataclass
class ToolTotals:
    calls: int = 0
    records: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    double_runs: int = 0
    """Calls that ran while a run of an earlier call of the tool, given up on, still went on."""
    repeated_effects: int = 0
    """Calls whose write the service applied more than once."""
    retries: int = 0
    """Attempts beyond each call's first."""
    times: list[float] = field(default_factory=list)
    """Seconds from ask to record, per recorded call."""
    unknown_times: list[float] = field(default_factory=list)
    """The same, for the calls recorded outcome_unknown: how long until the model knew that
    nobody knows."""

    def share(self, hits: int) -> dict[str, float | int]:
        """`hits` of this tool's calls, as a share with its 95% Wilson interval."""
        low, high = wilson(hits, self.calls)
        return {"count": hits, "share": hits / self.calls if self.calls else 0.0,
                "low": low, "high": high}

    def time_to_record(self) -> tuple[float, float, float] | None:
        """Mean, median and 99th percentile seconds from ask to record, if any call got one."""
        return percentiles(self.times) if self.times else None

    def time_to_unknown(self) -> tuple[float, float, float] | None:
        """The same for the calls recorded outcome_unknown, if any."""
        return percentiles(self.unknown_times) if self.unknown_times else None


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
        if s.recorded_at is not None:
            t.times.append(s.recorded_at - s.asked_at)
            if s.status is OUTCOME_UNKNOWN:
                t.unknown_times.append(s.recorded_at - s.asked_at)
        if (s.tool, s.key) in doubled:
            t.double_runs += 1
        if applied.get(s.key, 0) > 1:
            t.repeated_effects += 1


def combined(totals: Mapping[str, ToolTotals]) -> ToolTotals:
    """Every tool's calls as one."""
    out = ToolTotals()
    for t in totals.values():
        out.calls += t.calls
        for record, n in t.records.items():
            out.records[record] += n
        out.double_runs += t.double_runs
        out.repeated_effects += t.repeated_effects
        out.retries += t.retries
        out.times += t.times
        out.unknown_times += t.unknown_times
    return out
