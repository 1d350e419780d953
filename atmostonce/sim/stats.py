"""Outcome statistics of simulated runs: which records appear for each effect class, how often a
call was retried, how long a record took, and every double run with whether it has the
documented shape (TC-AMO-4); and the interval and percentile helpers the reports share."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from atmostonce.check.history.call_edges import NO_EDGES, CallEdges, EdgeKey
from atmostonce.check.history.checkers import CallSummary
from atmostonce.check.history.state import DoubleRun
from atmostonce.sim.shapes import NO_SHAPES, add_counts, shapes_json
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import Record

EFFECTS = tuple(e.value for e in EffectClass)
RECORDS = tuple(r.value for r in Record)
Z95 = 1.959963984540054
"""The standard normal's 97.5th percentile: a two-sided 95% interval."""


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion, `hits` out of `n` trials (95% by default);
    unlike the normal approximation it stays inside [0, 1] and is not empty at 0 hits."""
    if n <= 0:
        return 0.0, 1.0
    p = hits / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def percentiles(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean, median and 99th percentile (nearest rank below) of `values`, not empty."""
    ordered = sorted(values)
    n = len(ordered)
    return sum(ordered) / n, ordered[n // 2], ordered[min(n - 1, n * 99 // 100)]


@dataclass(frozen=True, slots=True)
class RunStats:
    """What one run produced."""

    calls: int
    records: tuple[tuple[str, str, int], ...]
    """(effect class, record or "none", count)."""
    retries: tuple[tuple[str, int], ...]
    """(effect class, attempts beyond each call's first)."""
    times: tuple[tuple[str, float], ...]
    """(effect class, seconds from ask to record), one per recorded call."""
    double_runs: tuple[DoubleRun, ...]
    witnessed: frozenset[str]
    restarts: int
    events: int
    sim_seconds: float
    taken: CallEdges = NO_EDGES
    """The call machines' edges the run took (`atmostonce.check.history.call_edges`)."""
    shapes: tuple[int, ...] = NO_SHAPES
    """How often each input shape of `atmostonce.sim.shapes.SHAPES` occurred."""


def run_stats(summaries: Iterable[CallSummary], double_runs: Iterable[DoubleRun],
              witnessed: Iterable[str], restarts: int, events: int,
              sim_seconds: float, taken: CallEdges = NO_EDGES,
              shapes: tuple[int, ...] = NO_SHAPES) -> RunStats:
    counts: dict[tuple[str, str], int] = {}
    retries: dict[str, int] = {}
    times: list[tuple[str, float]] = []
    calls = 0
    for s in summaries:
        calls += 1
        effect = s.effect.value
        record = s.status.value if s.status is not None else "none"
        counts[(effect, record)] = counts.get((effect, record), 0) + 1
        if s.attempts > 1:
            retries[effect] = retries.get(effect, 0) + s.attempts - 1
        if s.recorded_at is not None:
            times.append((effect, s.recorded_at - s.asked_at))
    return RunStats(calls, tuple((e, r, n) for (e, r), n in sorted(counts.items())),
                    tuple(sorted(retries.items())), tuple(times), tuple(double_runs),
                    frozenset(witnessed), restarts, events, sim_seconds, taken, shapes)


class Totals:
    """Statistics summed over the runs of a campaign."""

    def __init__(self) -> None:
        self.runs = 0
        self.calls = 0
        self.events = 0
        self.sim_seconds = 0.0
        self.restarts = 0
        self.records: dict[str, dict[str, int]] = {e: {} for e in EFFECTS}
        self.retries: dict[str, int] = {}
        self.times: dict[str, list[float]] = {}
        self.double_runs = 0
        self.documented = 0
        self.fenced = 0
        self.witnessed: set[str] = set()
        self.taken: dict[EdgeKey, int] = {}
        self.unnamed_failures = 0
        self.shapes = NO_SHAPES

    def add(self, stats: RunStats) -> None:
        self.runs += 1
        self.calls += stats.calls
        self.events += stats.events
        self.sim_seconds += stats.sim_seconds
        self.restarts += stats.restarts
        for effect, record, n in stats.records:
            row = self.records[effect]
            row[record] = row.get(record, 0) + n
        for effect, n in stats.retries:
            self.retries[effect] = self.retries.get(effect, 0) + n
        for effect, seconds in stats.times:
            self.times.setdefault(effect, []).append(seconds)
        for d in stats.double_runs:
            self.double_runs += 1
            self.documented += d.documented
            self.fenced += d.fence
        self.witnessed |= stats.witnessed
        for key, n in stats.taken.counts:
            self.taken[key] = self.taken.get(key, 0) + n
        self.unnamed_failures += stats.taken.unnamed_failures
        self.shapes = add_counts(self.shapes, stats.shapes)

    def never_succeeded(self) -> list[str]:
        """The effect classes whose calls never recorded succeeded: on a workload whose tools
        mostly return, an executor that runs nothing or mislabels every result (TC-REC-SUCC)
        shows here though each history alone breaks no property."""
        return [effect for effect, row in self.records.items()
                if row and not row.get("succeeded")]

    def time_to_record(self) -> Mapping[str, tuple[float, float, float]]:
        """Per effect class: mean, median and 99th percentile seconds from ask to record."""
        return {effect: percentiles(values) for effect, values in self.times.items()}

    def as_json(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "calls": self.calls,
            "events": self.events,
            "simulated_seconds": round(self.sim_seconds, 3),
            "server_restarts": self.restarts,
            "records": {e: dict(sorted(r.items())) for e, r in self.records.items() if r},
            "retries": dict(sorted(self.retries.items())),
            "time_to_record": {e: {"mean": round(m, 4), "p50": round(p50, 4),
                                   "p99": round(p99, 4)}
                               for e, (m, p50, p99) in sorted(self.time_to_record().items())},
            "double_runs": {"total": self.double_runs, "documented_shape": self.documented,
                            "with_fence": self.fenced},
            "witnessed": sorted(self.witnessed),
            "shapes": shapes_json(self.shapes),
        }
