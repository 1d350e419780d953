"""Running a scenario file: each seed through the engine with every history judged online by
the same checkers as a profile's campaign, statistics per tool, the first failures shrunk, and
a sweep that runs the scenario once per value of one setting."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.sim.agents import SETTLE
from atmostonce.sim.campaign import CampaignResult
from atmostonce.sim.engine import Simulation
from atmostonce.sim.faults import FaultKind
from atmostonce.sim.run import RunResult, run_scenario
from atmostonce.sim.scenario import ScenarioFile
from atmostonce.sim.scenario_draw import build, check_size
from atmostonce.sim.tool_stats import ToolTotals, add_run
from atmostonce.spec.protocol import ExecutorFactory

Progress = Callable[[int, int, int], None]
"""Called after each seed with (seeds done, seeds in all, violations so far)."""
FAULTS = {FaultKind.CRASH: "worker crashes", FaultKind.PARTITION: "connection losses",
          FaultKind.RESTART: "server restarts", FaultKind.LATE_TIMERS: "late timer spells"}


@dataclass(frozen=True)
class ScenarioOrigin:
    """A seed of a scenario file: how to run it again and the command that does."""

    spec: ScenarioFile
    seed: int

    def rerun(self, factory: ExecutorFactory, executor: str, only: tuple[int, ...] | None,
              keep_history: bool = False, stop_on: str | None = None) -> RunResult:
        return run_one(self.spec, self.seed, factory, executor, only, keep_history,
                       stop_on)[0]

    def replay_command(self, executor: str, only: tuple[int, ...] | None) -> str:
        return replay_command(self.spec, self.seed, executor, only)


def replay_command(spec: ScenarioFile, seed: int, executor: str = DEFAULT_EXECUTOR,
                   only: Sequence[int] | None = None) -> str:
    """The exact command that reruns one seed of the scenario and prints its history."""
    words = ["atmostonce", "replay", str(seed), "--scenario", spec.path]
    for name, value in spec.settings:
        words += ["--set", f"{name}={value}"]
    if executor != DEFAULT_EXECUTOR:
        words += ["--executor", executor]
    if only is not None:
        words += ["--faults", ",".join(str(i) for i in only) or "none"]
    return shlex.join(words)


def run_one(spec: ScenarioFile, seed: int, factory: ExecutorFactory,
            executor: str = DEFAULT_EXECUTOR, only: Sequence[int] | None = None,
            keep_history: bool = False, stop_on: str | None = None
            ) -> tuple[RunResult, Simulation]:
    """Run one seed of the scenario; the finished simulation comes back for statistics."""
    kept = tuple(sorted(set(only))) if only is not None else None
    return run_scenario(build(spec, seed, kept), factory, executor, kept,
                        ScenarioOrigin(spec, seed), keep_history, stop_on)


@dataclass
class ScenarioResult:
    """A scenario's seeds, run: the campaign's verdict and failures, and per tool totals."""

    spec: ScenarioFile
    campaign: CampaignResult
    tools: dict[str, ToolTotals] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAULTS.values(), 0))
    """Faults injected while the sessions ran, summed over the seeds."""

    @property
    def ok(self) -> bool:
        return self.campaign.ok


def simulate(spec: ScenarioFile, seeds: Sequence[int], factory: ExecutorFactory,
             executor: str = DEFAULT_EXECUTOR, progress: Progress | None = None,
             shrink_first: int = 3, shrink_budget: int = 150) -> ScenarioResult:
    """Run every seed; shrink the fault schedules of the first `shrink_first` failures."""
    check_size(spec)
    campaign = CampaignResult(f"scenario {spec.name}", executor)
    result = ScenarioResult(spec, campaign)
    wall = time.perf_counter()
    cpu = time.process_time()
    names = [t.name for t in spec.tools]
    for done, seed in enumerate(seeds, start=1):
        run, sim = run_one(spec, seed, factory, executor)
        campaign.add(seed, run)
        checker = sim.history.checker
        add_run(result.tools, names, checker.summaries(), checker.double_runs,
                sim.ledger.applied)
        quiet_from = sim.now - SETTLE
        for fault in run.scenario.faults:
            if fault.at < quiet_from:
                result.faults[FAULTS[fault.kind]] += 1
        if progress is not None:
            progress(done, len(seeds), campaign.violations)
    campaign.finish(wall, cpu, factory, shrink_first, shrink_budget)
    return result


@dataclass(frozen=True)
class SweepRow:
    value: str
    result: ScenarioResult


def sweep(name: str, specs: Sequence[tuple[str, ScenarioFile]], seeds: Sequence[int],
          factory: ExecutorFactory, executor: str = DEFAULT_EXECUTOR,
          progress: Callable[[str, ScenarioResult, float], None] | None = None
          ) -> list[SweepRow]:
    """Run each (value, scenario) on the same seeds, in order; `progress` hears of each value
    once it is done, with the seconds it took."""
    rows = []
    for value, spec in specs:
        started = time.monotonic()
        result = simulate(spec, seeds, factory, executor)
        rows.append(SweepRow(value, result))
        if progress is not None:
            progress(f"{name}={value}", result, time.monotonic() - started)
    return rows
