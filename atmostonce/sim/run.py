"""One seed, run: its scenario against an executor, its verdict, statistics and the command
that replays it. A seed of a fault profile is rebuilt from its seed and profile; any other
scenario (a scenario file's) carries an `Origin` that rebuilds it and names its replay."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.check.history.checkers import History
from atmostonce.check.history.entries import HistoryViolation
from atmostonce.sim.engine import Scenario, Simulation, scenario
from atmostonce.sim.faults import profile as find_profile
from atmostonce.sim.stats import RunStats, run_stats
from atmostonce.spec.protocol import ExecutorFactory


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    executor: str
    violations: tuple[HistoryViolation, ...]
    stats: RunStats
    wall_seconds: float
    only: tuple[int, ...] | None
    history: History | None
    error: str | None = None
    """The executor raised (or the run never settled): the run stopped there."""
    origin: Origin | None = None
    """Where a scenario that is not a profile's seed comes from; None for a profile's."""

    @property
    def seed(self) -> int:
        return self.scenario.seed

    @property
    def ok(self) -> bool:
        return not self.violations and self.error is None

    def problems(self) -> list[str]:
        """One line per violation, and the executor's error if it raised."""
        lines = [v.line() for v in self.violations]
        if self.error is not None:
            lines.append(f"executor error: {self.error}")
        return lines

    def replay_command(self) -> str:
        if self.origin is not None:
            return self.origin.replay_command(self.executor, self.only)
        return replay_command(self.seed, self.scenario.profile.name, self.executor, self.only)


class Origin(Protocol):
    """Where a seed's scenario comes from when it is not a fault profile's: it reruns the seed
    (with `only`: just those faults of its schedule) and names the command that does."""

    def rerun(self, factory: ExecutorFactory, executor: str, only: tuple[int, ...] | None,
              keep_history: bool = False, stop_on: str | None = None) -> RunResult:
        ...

    def replay_command(self, executor: str, only: tuple[int, ...] | None) -> str:
        ...


def replay_command(seed: int, profile: str, executor: str,
                   only: Iterable[int] | None = None) -> str:
    """The exact command that reruns a seed (with `only`: just those faults of its schedule)."""
    command = f"atmostonce replay {seed} --profile {profile}"
    if executor != DEFAULT_EXECUTOR:
        command += f" --executor {executor}"
    if only is not None:
        command += f" --faults {','.join(str(i) for i in only) or 'none'}"
    return command


def run_seed(seed: int, profile: str, factory: ExecutorFactory,
             executor: str = DEFAULT_EXECUTOR, only: Iterable[int] | None = None,
             keep_history: bool = False, stop_on: str | None = None) -> RunResult:
    """Run `seed` under `profile` against the executors `factory` builds."""
    with _collected_at_end():
        return _run(seed, profile, factory, executor, only, keep_history, stop_on)


@contextmanager
def _collected_at_end() -> Iterator[None]:
    """Pause automatic garbage collection while a seed runs and collect the run's garbage in
    one pass after it.

    A run builds thousands of objects in reference cycles (sessions and their calls, the
    checker's calls and attempts, the simulation and its workers) that all live until the run
    ends. Left on, the cyclic collector rescans them several times while they are still in use
    and again once they are garbage, which took a sixth to a quarter of a campaign's time;
    paused, each is scanned once. Nothing changes when the caller had turned collection off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(1)


def _run(seed: int, profile: str, factory: ExecutorFactory, executor: str,
         only: Iterable[int] | None, keep_history: bool, stop_on: str | None) -> RunResult:
    kept = tuple(sorted(set(only))) if only is not None else None
    scn = scenario(seed, find_profile(profile), kept)
    return _simulate(scn, factory, executor, kept, keep_history, stop_on, None)[0]


def run_scenario(scn: Scenario, factory: ExecutorFactory, executor: str,
                 only: tuple[int, ...] | None, origin: Origin, keep_history: bool = False,
                 stop_on: str | None = None) -> tuple[RunResult, Simulation]:
    """Run a scenario built elsewhere (`only`: the schedule indexes its faults kept); the
    finished simulation comes back too, for statistics of its own."""
    with _collected_at_end():
        return _simulate(scn, factory, executor, only, keep_history, stop_on, origin)


def _simulate(scn: Scenario, factory: ExecutorFactory, executor: str,
              kept: tuple[int, ...] | None, keep_history: bool, stop_on: str | None,
              origin: Origin | None) -> tuple[RunResult, Simulation]:
    started = time.perf_counter()
    sim = Simulation(scn, factory, stop_on, keep_history)
    history = sim.run()
    wall = time.perf_counter() - started
    checker = history.checker
    stats = run_stats(checker.summaries(), checker.double_runs, checker.witnessed,
                      sim.server.restarts, sim.events, sim.now,
                      checker.call_edges(), sim.shapes.counts())
    return RunResult(scn, executor, tuple(history.violations), stats, wall, kept,
                     history if keep_history else None, sim.error, origin), sim
