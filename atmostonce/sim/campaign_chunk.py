"""A chunk of a campaign's seeds, run where the fan-out puts it (a worker process, a Ray
worker): the executor is loaded again there from its `module:factory` path, with the
`ATMOSTONCE_` settings of the caller (such as `--executor-cmd`'s command), and what comes back
is small: each seed's statistics, and the whole run only of a seed that failed."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from atmostonce.check.executors.loading import load_callable, load_factory
from atmostonce.sim.run import RunResult, run_seed
from atmostonce.sim.stats import RunStats
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorFactory

SETTINGS_PREFIX = "ATMOSTONCE_"


@dataclass(frozen=True)
class Chunk:
    seeds: tuple[int, ...]
    profile: str
    executor: str
    settings: tuple[tuple[str, str], ...]
    """The caller's `ATMOSTONCE_` environment, set in the worker before the executor loads."""


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
    """A chunk of `seeds`, carrying this process's `ATMOSTONCE_` settings."""
    settings = tuple(sorted((k, v) for k, v in os.environ.items()
                            if k.startswith(SETTINGS_PREFIX)))
    return Chunk(seeds, profile, executor, settings)


def reloadable(executor: str, factory: ExecutorFactory) -> None:
    """SpecError unless loading `executor` again (as a worker does) gives this very `factory`:
    a factory made on the fly (a closure) cannot be sent to another process."""
    try:
        again = load_callable(executor, "executor", "", "module:factory")
    except SpecError:
        again = None
    if again is not factory:
        raise SpecError(f"cannot fan the campaign out: its executor factory is not the one "
                        f"{executor!r} names, and a worker can load only a factory named by "
                        "its module:factory path")


_factories: dict[str, ExecutorFactory] = {}


def run_chunk(work: Chunk) -> ChunkResult:
    """Every seed of the chunk, in order, with the CPU time they took in this process."""
    os.environ.update(work.settings)
    factory = _factories.get(work.executor)
    if factory is None:
        factory = _factories[work.executor] = load_factory(work.executor)
    cpu = time.process_time()
    runs = []
    for seed in work.seeds:
        run = run_seed(seed, work.profile, factory, work.executor)
        runs.append(Ran(seed, run.stats, None if run.ok else run))
    return ChunkResult(tuple(runs), time.process_time() - cpu)
