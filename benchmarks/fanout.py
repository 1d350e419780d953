"""How much faster a campaign runs fanned out (`atmostonce.fanout`): the same chaos campaign
serially, on 2 worker processes and on a local Ray with 2 CPUs, measured side by side in
rounds (serial, processes, Ray, serial, processes, Ray, ...), with simulated tool calls per
wall-clock second and each way's ratio to serial from the best round of each. The local Ray
is started once before the rounds (its start-up time is printed apart); every round's results
must equal the serial run's but for the timings, or the benchmark stops."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from atmostonce.fanout.way import LOCAL, SERIAL, Way
from atmostonce.sim.campaign import campaign
from atmostonce.sim.report import campaign_json
from atmostonce.spec.protocol import ExecutorFactory

TIMINGS = ("seconds", "calls_per_second", "cpu_seconds", "calls_per_cpu_second")
PROCESSES = 2


@dataclass(frozen=True)
class Round:
    way: Way
    calls: int
    wall: float
    cpu: float
    """CPU seconds of the seeds' runs in every process, and of this one (start-ups aside)."""
    results: str

    @property
    def calls_per_second(self) -> float:
        return self.calls / self.wall


def _once(seeds: int, profile: str, factory: ExecutorFactory, executor: str, way: Way
          ) -> Round:
    started = time.perf_counter()
    result = campaign(range(seeds), profile, factory, executor, way=way)
    wall = time.perf_counter() - started
    data = campaign_json(result)
    for field in TIMINGS:
        del data[field]
    return Round(way, result.totals.calls, wall, result.cpu_seconds, json.dumps(data))


def _start_ray() -> float | None:
    """Seconds a local Ray took to start, or None without Ray installed. The repository's
    root goes on PYTHONPATH first, so Ray's workers run this checkout as the driver does."""
    if importlib.util.find_spec("ray") is None:
        return None
    import ray

    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    started = time.perf_counter()
    ray.init(address="local", include_dashboard=False, num_cpus=PROCESSES,
             log_to_driver=False, logging_level=logging.ERROR)
    return time.perf_counter() - started


def compare(seeds: int, rounds: int, profile: str, factory: ExecutorFactory,
            executor: str) -> None:
    """Print the side-by-side measure of serial, processes and local Ray."""
    started = _start_ray()
    ways = [SERIAL, Way(PROCESSES)]
    if started is not None:
        ways.append(Way(PROCESSES, LOCAL))
    print(f"campaign fan-out: {seeds} {profile} seeds, executor {executor}, {rounds} rounds "
          f"of {', '.join(w.describe() for w in ways)}, side by side; "
          f"{os.cpu_count()} CPUs on this machine")
    if started is None:
        print("Ray is not installed (pip install -e '.[ray]'): the local Ray is left out")
    else:
        print(f"local Ray started in {started:.1f} s (not counted in the rounds)")
    measured: dict[Way, list[Round]] = {w: [] for w in ways}
    try:
        for _ in range(rounds):
            for w in ways:
                measured[w].append(_once(seeds, profile, factory, executor, w))
    finally:
        if started is not None:
            import ray

            ray.shutdown()
    expected = measured[SERIAL][0].results
    for w, runs in measured.items():
        if any(r.results != expected for r in runs):
            sys.exit(f"{w.describe()} gave results other than the serial run's")
    best = {w: max(runs, key=lambda r: r.calls_per_second) for w, runs in measured.items()}
    base = best[SERIAL].calls_per_second
    print(f"{'way':<24} {'calls':>8} {'best s':>8} {'calls/s':>9} {'x serial':>9} "
          f"{'calls/CPU s':>12}   every round (s)")
    for w, runs in measured.items():
        b = best[w]
        print(f"{w.describe():<24} {b.calls:>8,} {b.wall:>8.2f} {b.calls_per_second:>9,.0f} "
              f"{b.calls_per_second / base:>9.2f} {b.calls / b.cpu:>12,.0f}   "
              f"{' '.join(f'{r.wall:.2f}' for r in runs)}")
    print("results identical to the serial run's in every round (statistics, violations, "
          "failures; timings aside)")
