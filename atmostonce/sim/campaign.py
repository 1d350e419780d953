"""Campaigns: many seeds against one executor, with statistics summed and every failure kept
with its seed, its replay command and, for the first few, a shrunk fault schedule.

Usable from any harness:

    result = campaign(range(100), "chaos", load_factory("atmostonce.executor:reference"))
    result.ok, result.failures, result.totals.as_json(), result.calls_per_second

Given a `Way` other than serial, the seeds run in chunks on worker processes or on Ray
(`atmostonce.fanout`) and are added back in seed order, so every sum, list and failure comes
out as a serial run's; only the timings differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.check.executors.reloading import reloadable
from atmostonce.fanout.chunks import chunks
from atmostonce.fanout.run import fan_out
from atmostonce.fanout.way import SERIAL, Way
from atmostonce.progress import Meter
from atmostonce.sim.campaign_chunk import ChunkResult, chunk, run_chunk
from atmostonce.sim.faults import profile as find_profile
from atmostonce.sim.run import RunResult, run_seed
from atmostonce.sim.shrink import Shrunk, shrink
from atmostonce.sim.stats import Totals
from atmostonce.spec.protocol import ExecutorFactory

Progress = Callable[[int, int, int], None]
"""Called after each seed with (seeds done, seeds in all, violations so far)."""


def shown_on(meter: Meter) -> Progress:
    """A campaign's progress as a line of the live display: seeds towards the total, and the
    violations so far."""
    def progress(done: int, total: int, violations: int) -> None:
        meter.update(done, total=total, note=f"{violations} violations")

    return progress


@dataclass
class Failure:
    """A seed that broke a property: its run and, when shrunk, its smallest schedule."""

    run: RunResult
    shrunk: Shrunk | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "seed": self.run.seed,
            "profile": self.run.scenario.profile.name,
            "replay": self.run.replay_command(),
            "violations": [
                {"property": v.property, "call": v.key, "message": v.message,
                 "positions": list(v.positions)}
                for v in self.run.violations
            ],
            "error": self.run.error,
        }
        if self.shrunk is not None:
            s = self.shrunk
            out["shrunk"] = {
                "property": s.property,
                "faults_before": s.original,
                "kept": list(s.kept),
                "faults_after": [f.describe() for f in s.result.scenario.faults],
                "replay": s.result.replay_command(),
                "tests": s.tests,
            }
        return out


@dataclass
class CampaignResult:
    profile: str
    executor: str
    seeds: list[int] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)
    failures: list[Failure] = field(default_factory=list)
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def calls_per_second(self) -> float:
        """Simulated tool calls per CPU second, checks included: this process's CPU time, and
        when fanned out the time the workers spent running the seeds."""
        return self.totals.calls / self.cpu_seconds if self.cpu_seconds > 0 else 0.0

    @property
    def violations(self) -> int:
        """Violations found so far, an executor error counting as one."""
        return sum(len(f.run.violations) + (f.run.error is not None) for f in self.failures)

    def add(self, seed: int, run: RunResult) -> None:
        """One seed's run, counted; a failing one kept for shrinking."""
        self.seeds.append(seed)
        self.totals.add(run.stats)
        if not run.ok:
            self.failures.append(Failure(run))

    def add_chunk(self, done: ChunkResult) -> None:
        """A chunk's seeds, in order, as `add` counts them one by one; its CPU time too."""
        for ran in done.runs:
            self.seeds.append(ran.seed)
            self.totals.add(ran.stats)
            if ran.failed is not None:
                self.failures.append(Failure(ran.failed))
        self.cpu_seconds += done.cpu_seconds

    def finish(self, wall: float, cpu: float, factory: ExecutorFactory, shrink_first: int,
               shrink_budget: int) -> None:
        """The time taken since `wall` and `cpu`, then the first `shrink_first` failures
        shrunk."""
        self.cpu_seconds += time.process_time() - cpu
        self.wall_seconds = time.perf_counter() - wall
        for failure in self.failures[:shrink_first]:
            failure.shrunk = shrink(failure.run, factory, shrink_budget)


def campaign(seeds: Iterable[int], profile: str, factory: ExecutorFactory,
             executor: str = DEFAULT_EXECUTOR, progress: Progress | None = None,
             shrink_first: int = 3, shrink_budget: int = 150, way: Way = SERIAL
             ) -> CampaignResult:
    """Run every seed, the way `way` says (a worker loads the executor again by its path
    `executor`); shrink the schedules of the first `shrink_first` failures, here."""
    find_profile(profile)
    todo = list(seeds)
    result = CampaignResult(profile, executor)
    wall = time.perf_counter()
    cpu = time.process_time()
    if way.serial:
        for done, seed in enumerate(todo, start=1):
            result.add(seed, run_seed(seed, profile, factory, executor))
            if progress is not None:
                progress(done, len(todo), result.violations)
    else:
        reloadable(executor, factory)
        pieces = [chunk(part, profile, executor) for part in chunks(todo, way.workers)]
        heard = [0, 0]

        def finished(_: int, done: ChunkResult) -> None:
            heard[0] += len(done.runs)
            heard[1] += done.violations
            if progress is not None:
                progress(heard[0], len(todo), heard[1])

        for piece in fan_out(run_chunk, pieces, way, finished):
            result.add_chunk(piece)
    result.finish(wall, cpu, factory, shrink_first, shrink_budget)
    return result
