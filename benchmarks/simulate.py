"""How fast the fault simulator runs, with every history checker on.

Reports, per fault profile, simulated tool calls per CPU second of one core, simulated-time
acceleration (simulated seconds per wall second), events per second, and the share of the time
spent inside the executor under test (the rest is the simulator and the checkers). The best of
a few repetitions is reported: a benchmark, never a timed test.

    python benchmarks/simulate.py [--seeds N] [--repeat R] [--profiles none,chaos]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if not __package__:  # run as a script: measure this checkout, not an installed copy
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atmostonce.check.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.check.protocol import JSON, Command, Event, Executor, ExecutorConfig
from atmostonce.check.protocol import ExecutorFactory as Factory
from atmostonce.sim.run import run_seed
from atmostonce.spec.session import AgentSnapshot


class _Timed:
    """An executor that measures the time its wrapped executor takes."""

    spent = 0.0

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    def handle(self, event: Event) -> list[Command]:
        started = time.process_time()
        try:
            return self.inner.handle(event)
        finally:
            _Timed.spent += time.process_time() - started

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        started = time.process_time()
        try:
            return self.inner.recover(journal, at)
        finally:
            _Timed.spent += time.process_time() - started

    def snapshot(self, session_id: str) -> AgentSnapshot:
        started = time.process_time()
        try:
            return self.inner.snapshot(session_id)
        finally:
            _Timed.spent += time.process_time() - started


@dataclass(frozen=True)
class Measure:
    profile: str
    seeds: int
    calls: int
    events: int
    cpu: float
    wall: float
    simulated: float
    in_executor: float

    @property
    def calls_per_cpu_second(self) -> float:
        return self.calls / self.cpu

    @property
    def acceleration(self) -> float:
        return self.simulated / self.wall


def measure(profile: str, seeds: int, factory: Factory, timed: bool) -> Measure:
    def build(config: ExecutorConfig) -> Executor:
        return _Timed(factory(config)) if timed else factory(config)

    _Timed.spent = 0.0
    calls = events = 0
    simulated = 0.0
    cpu = time.process_time()
    wall = time.perf_counter()
    for seed in range(seeds):
        run = run_seed(seed, profile, build)
        if not run.ok:
            raise SystemExit(f"seed {seed} broke a property: {run.replay_command()}")
        calls += run.stats.calls
        events += run.stats.events
        simulated += run.stats.sim_seconds
    return Measure(profile, seeds, calls, events, time.process_time() - cpu,
                   time.perf_counter() - wall, simulated, _Timed.spent)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profiles", default="none,chaos")
    parser.add_argument("--executor", default=DEFAULT_EXECUTOR)
    args = parser.parse_args(argv)
    factory = load_factory(args.executor)
    print(f"fault simulator, checks on, executor {args.executor}, {args.seeds} seeds per "
          f"profile, best of {args.repeat}")
    print(f"{'profile':<10} {'calls':>8} {'calls/CPU s':>12} {'events/CPU s':>13} "
          f"{'sim s/wall s':>13} {'in executor':>12}")
    for profile in args.profiles.split(","):
        runs = [measure(profile, args.seeds, factory, False) for _ in range(args.repeat)]
        best = max(runs, key=lambda m: m.calls_per_cpu_second)
        share = measure(profile, args.seeds, factory, True)
        print(f"{profile:<10} {best.calls:>8,} {best.calls_per_cpu_second:>12,.0f} "
              f"{best.events / best.cpu:>13,.0f} {best.acceleration:>13,.0f} "
              f"{100 * share.in_executor / share.cpu:>11.0f}%")


if __name__ == "__main__":
    main()
