"""A chunk of a campaign's seeds, run where the fan-out puts it (a worker process, a Ray
worker): the executor is loaded again there by its path (`check.executors.reloading`), and
what comes back is small: each seed's statistics, and the whole run only of a seed that
failed."""

from __future__ import annotations

import time
from dataclasses import dataclass

from atmostonce.check.executors.reloading import Settings, reload, settings
from atmostonce.sim.run import RunResult, run_seed
from atmostonce.sim.stats import RunStats


@dataclass(frozen=True)
class Chunk:
    seeds: tuple[int, ...]
    profile: str
    executor: str
    settings: Settings


@dataclass(frozen=True)
class Ran:
    """One seed's run as it comes back: its statistics, and the run itself when it failed."""

    seed: int
    stats: RunStats
    failed: RunResult | None


@dataclass(frozen=True)
class ChunkResult:
    runs: tuple[Ran, ...]
    cpu_seconds: float

    @property
    def violations(self) -> int:
        return sum(len(r.failed.violations) + (r.failed.error is not None)
                   for r in self.runs if r.failed is not None)


def chunk(seeds: tuple[int, ...], profile: str, executor: str) -> Chunk:
    """A chunk of `seeds`, carrying this process's settings."""
    return Chunk(seeds, profile, executor, settings())


def run_chunk(work: Chunk) -> ChunkResult:
    """Every seed of the chunk, in order, with the CPU time they took in this process."""
    factory = reload(work.executor, work.settings)
    cpu = time.process_time()
    runs = []
    for seed in work.seeds:
        run = run_seed(seed, work.profile, factory, work.executor)
        runs.append(Ran(seed, run.stats, None if run.ok else run))
    return ChunkResult(tuple(runs), time.process_time() - cpu)
