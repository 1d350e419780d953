"""What the pipe protocol costs: verify's conformance replay of model schedules on an executor in
process, against the same executor served over the pipe (`--executor-cmd`), side by side.

Rounds alternate the two sides (A B A B ...), so a drift in the machine's speed hits both; each
round replays every schedule within `--depth` under the default model configuration, serially
in this process, on a fresh executor each. The report gives each side's median seconds over the
rounds and the ratio of the medians. The served executor is the reference one behind
`python -m atmostonce.executor.stdio`, unless `--cmd` names another command (such as an
executor in another language; then `--executor` names the in-process one to compare with).

A benchmark, never a timed test; figures come from one run on this machine.

    python benchmarks/pipe.py [--depth D] [--rounds R] [--cmd "CMD ARGS"] [--json]
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

if not __package__:  # run as a script: measure this checkout, not an installed copy
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atmostonce.check.executors import pipe
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.check.lockstep.conformance import replay_schedules
from atmostonce.model.check import DEFAULT
from atmostonce.spec.protocol import ExecutorFactory

SERVED = (f"{shlex.quote(sys.executable)} -m atmostonce.executor.stdio "
          "atmostonce.executor:reference")


@dataclass(frozen=True)
class Figures:
    depth: int
    rounds: int
    schedules: int
    steps: int
    in_process_seconds: float
    pipe_seconds: float
    ratio: float
    command: str


def _replay(factory: ExecutorFactory, depth: int) -> tuple[float, int, int]:
    started = time.perf_counter()
    result = replay_schedules(DEFAULT, factory, depth)
    seconds = time.perf_counter() - started
    if not result.ok:
        raise SystemExit(f"the executor failed conformance: {result.disagreements[:1]}"
                         f"{result.breaches[:1]}")
    return seconds, result.schedules, result.steps


def measure(depth: int, rounds: int, command: str, executor: str) -> Figures:
    inside = load_factory(executor)
    pipe.use(command, timeout=30.0)
    a: list[float] = []
    b: list[float] = []
    counts: set[tuple[int, int]] = set()
    for _ in range(rounds):
        seconds, schedules, steps = _replay(inside, depth)
        a.append(seconds)
        counts.add((schedules, steps))
        seconds, schedules, steps = _replay(pipe.from_environment, depth)
        b.append(seconds)
        counts.add((schedules, steps))
    pipe.close_children()
    if len(counts) != 1:
        raise SystemExit(f"the two sides replayed different schedules: {sorted(counts)}")
    (schedules, steps), = counts
    median_a, median_b = statistics.median(a), statistics.median(b)
    return Figures(depth, rounds, schedules, steps, median_a, median_b, median_b / median_a,
                   command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--depth", type=int, default=7, help="schedule depth (default 7)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (default 3)")
    parser.add_argument("--cmd", default=SERVED, help="the executor command over the pipe")
    parser.add_argument("--executor", default=DEFAULT_EXECUTOR,
                        help="the in-process executor to compare with")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    figures = measure(args.depth, args.rounds, args.cmd, args.executor)
    if args.json:
        print(json.dumps(asdict(figures), indent=2))
        return 0
    print(f"conformance replay, depth {figures.depth}: {figures.schedules:,} schedules, "
          f"{figures.steps:,} steps, median of {figures.rounds} rounds per side")
    print(f"  in process:    {figures.in_process_seconds:8.2f} s")
    print(f"  over the pipe: {figures.pipe_seconds:8.2f} s  ({figures.command})")
    print(f"  ratio: {figures.ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
