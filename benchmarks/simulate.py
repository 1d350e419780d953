"""How fast the fault simulator runs, with every history checker on.

Reports, per fault profile, simulated tool calls per CPU second of one core, simulated-time
acceleration (simulated seconds per wall second), events per second, and where a simulated
call's time goes: inside the executor under test, judging the history (the online checks),
drawing the seed's scenario, and the simulator itself (event loop, network, workers, people,
the agent's model, building history entries, end-of-run garbage collection). The best of a few
repetitions is reported: a benchmark, never a timed test.

    python benchmarks/simulate.py [--seeds N] [--repeat R] [--profiles none,chaos]

With --fanout it measures instead how much faster the chaos campaign runs on 2 worker
processes and on a local Ray than serially, side by side in one run (`benchmarks/fanout.py`):

    python benchmarks/simulate.py --fanout [--seeds N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

if not __package__:  # run as a script: measure this checkout, not an installed copy
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.check.history.checkers import History
from atmostonce.sim.engine import scenario
from atmostonce.sim.faults import profile as find_profile
from atmostonce.sim.run import run_seed
from atmostonce.spec.protocol import Executor, ExecutorConfig
from atmostonce.spec.protocol import ExecutorFactory as Factory

T = TypeVar("T")


@dataclass
class _Parts:
    """Time spent inside the timed parts of a run, and how many timed calls measured each.
    The parts are timed with `perf_counter`, several times cheaper to read than the CPU
    clock; on an otherwise idle core the two agree."""

    spent: dict[str, float] = field(default_factory=lambda: {"executor": 0.0, "checks": 0.0})
    calls: dict[str, int] = field(default_factory=lambda: {"executor": 0, "checks": 0})

    def timed(self, part: str, fn: Callable[..., T]) -> Callable[..., T]:
        """`fn`, adding the time of each call to `part`."""
        clock = time.perf_counter
        spent = self.spent
        calls = self.calls

        def timed(*args: Any) -> T:
            started = clock()
            try:
                return fn(*args)
            finally:
                spent[part] += clock() - started
                calls[part] += 1

        return timed


class _TimedExecutor:
    """An executor whose calls are timed as the executor's part."""

    def __init__(self, inner: Executor, parts: _Parts) -> None:
        self.handle = parts.timed("executor", inner.handle)
        self.recover = parts.timed("executor", inner.recover)
        self.snapshot = parts.timed("executor", inner.snapshot)


@contextmanager
def _checks_timed(parts: _Parts) -> Iterator[None]:
    """Time the history's judging for the runs inside."""
    judge, append, finish = History.judge, History.append, History.finish
    History.judge = parts.timed("checks", judge)  # type: ignore[method-assign]
    History.append = parts.timed("checks", append)  # type: ignore[method-assign]
    History.finish = parts.timed("checks", finish)  # type: ignore[method-assign]
    try:
        yield
    finally:
        History.judge, History.append, History.finish = (  # type: ignore[method-assign]
            judge, append, finish)


def _timer_cost() -> tuple[float, float]:
    """Seconds one timed call adds inside its timed part and outside it, measured on an empty
    function."""
    def bare() -> None:
        return None

    parts = _Parts()
    empty = parts.timed("checks", bare)
    n = 200_000
    started = time.perf_counter()
    for _ in range(n):
        bare()
    base = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(n):
        empty()
    total = time.perf_counter() - started - base
    inside = parts.spent["checks"] / n
    return inside, max(0.0, total / n - inside)


@dataclass(frozen=True)
class Measure:
    profile: str
    seeds: int
    calls: int
    events: int
    cpu: float
    wall: float
    simulated: float

    @property
    def calls_per_cpu_second(self) -> float:
        return self.calls / self.cpu

    @property
    def acceleration(self) -> float:
        return self.simulated / self.wall


def measure(profile: str, seeds: int, factory: Factory) -> Measure:
    calls = events = 0
    simulated = 0.0
    cpu = time.process_time()
    wall = time.perf_counter()
    for seed in range(seeds):
        run = run_seed(seed, profile, factory)
        if not run.ok:
            raise SystemExit(f"seed {seed} broke a property: {run.replay_command()}")
        calls += run.stats.calls
        events += run.stats.events
        simulated += run.stats.sim_seconds
    return Measure(profile, seeds, calls, events, time.process_time() - cpu,
                   time.perf_counter() - wall, simulated)


def split(profile: str, seeds: int, factory: Factory,
          overhead: tuple[float, float]) -> dict[str, float]:
    """Microseconds per simulated call in each part, from one run with the executor and the
    checks timed and a separate timing of drawing every seed's scenario; each timer's own cost
    is taken out of the part it falls in."""
    parts = _Parts()

    def build(config: ExecutorConfig) -> Executor:
        return _TimedExecutor(factory(config), parts)

    drawn = find_profile(profile)
    started = time.perf_counter()
    for seed in range(seeds):
        scenario(seed, drawn)
    drawing = time.perf_counter() - started
    inside, outside = overhead
    with _checks_timed(parts):
        started = time.perf_counter()
        m = measure(profile, seeds, build)
        total = time.perf_counter() - started
    seconds = {part: spent - parts.calls[part] * inside for part, spent in parts.spent.items()}
    seconds["drawing"] = drawing
    timed_calls = sum(parts.calls.values())
    seconds["simulator"] = total - sum(seconds.values()) - timed_calls * (inside + outside)
    return {part: 1e6 * spent / m.calls for part, spent in seconds.items()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profiles", default="none,chaos")
    parser.add_argument("--executor", default=DEFAULT_EXECUTOR)
    parser.add_argument("--fanout", action="store_true",
                        help="time the chaos campaign serially, on 2 processes and on a local "
                        "Ray, side by side, --repeat rounds")
    args = parser.parse_args(argv)
    factory = load_factory(args.executor)
    if args.fanout:
        from benchmarks.fanout import compare

        compare(args.seeds, args.repeat, "chaos", factory, args.executor)
        return
    print(f"fault simulator, checks on, executor {args.executor}, {args.seeds} seeds per "
          f"profile, best of {args.repeat}")
    overhead = _timer_cost()
    rows = []
    for profile in args.profiles.split(","):
        runs = [measure(profile, args.seeds, factory) for _ in range(args.repeat)]
        best = max(runs, key=lambda m: m.calls_per_cpu_second)
        rows.append((best, split(profile, args.seeds, factory, overhead)))
    print(f"{'profile':<10} {'calls':>8} {'calls/CPU s':>12} {'events/CPU s':>13} "
          f"{'sim s/wall s':>13}")
    for best, _ in rows:
        print(f"{best.profile:<10} {best.calls:>8,} {best.calls_per_cpu_second:>12,.0f} "
              f"{best.events / best.cpu:>13,.0f} {best.acceleration:>13,.0f}")
    print("microseconds per simulated call, from one more run with the parts timed:")
    print(f"{'profile':<10} {'executor':>9} {'checks':>9} {'drawing':>9} {'simulator':>10} "
          f"{'total':>9}")
    for best, parts in rows:
        print(f"{best.profile:<10} {parts['executor']:>9.1f} {parts['checks']:>9.1f} "
              f"{parts['drawing']:>9.1f} {parts['simulator']:>10.1f} "
              f"{sum(parts.values()):>9.1f}")

if __name__ == "__main__":
    main()
