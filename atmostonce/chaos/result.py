"""What one chaos run found: the history's entries and violations, records seen and then lost,
double runs, the faults, what the clients saw, and the executor under test's failures, with
where the run's files were kept (`atmostonce.chaos.report` prints it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from atmostonce.chaos.lost import LostRecord
from atmostonce.chaos.nemesis import FaultLog
from atmostonce.chaos.observations import Observations
from atmostonce.chaos.options import ChaosOptions
from atmostonce.check.history.entries import Entry, HistoryViolation
from atmostonce.check.history.state import DoubleRun
from atmostonce.engines.adapter import ExecutorFailure
from atmostonce.sim.stats import RunStats, Totals


@dataclass
class ChaosResult:
    options: ChaosOptions
    engine: str
    entries: list[Entry]
    violations: list[HistoryViolation]
    lost: list[LostRecord]
    stats: RunStats
    faults: FaultLog
    obs: Observations
    notes: list[str]
    pids: list[int]
    seconds: float
    drained: bool
    errors: list[str] = field(default_factory=list)
    executor_failures: list[ExecutorFailure] = field(default_factory=list)
    """Each time the engine's server stopped because the executor under test failed."""
    kept: Path | None = None
    """Where the run's files (journal, ledger, every process's log) were kept, when the run
    failed (a violation, a lost record, an engine error, a failure of the executor under test)
    and the directory would otherwise have been removed."""
    not_checkable: dict[str, str] = field(default_factory=dict)
    """The properties the engine cannot give evidence for, and why (`Limits`)."""
    held_by_mapping: dict[str, str] = field(default_factory=dict)
    """The judged properties that hold only through the adapter's mapping, and how (`Limits`)."""

    @property
    def double_runs(self) -> tuple[DoubleRun, ...]:
        return self.stats.double_runs

    @property
    def witnessed(self) -> frozenset[str]:
        return self.stats.witnessed

    @property
    def totals(self) -> Totals:
        """The run's statistics in the simulator's campaign form, for its report tables."""
        totals = Totals()
        totals.add(self.stats)
        return totals

    @property
    def ok(self) -> bool:
        return (not self.violations and not self.lost and not self.errors
                and not self.executor_failures)

    def failure_lines(self) -> list[str]:
        """One line per failure of the executor under test, and where the files are."""
        lines = [f"the executor under test {self.options.executor} failed in the server: "
                 f"{failure.quoted()} (server log {failure.log})"
                 for failure in self.executor_failures]
        if self.kept is not None:
            lines.append(f"the run's files (journal, ledger, every process's log) are kept in "
                         f"{self.kept}")
        return lines
