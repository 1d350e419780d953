"""What the pipe protocol costs: verify's conformance layer at its defaults on an executor in
process, against executors served over the pipe (`--executor-cmd`), side by side in one run.

Each side is `atmostonce verify --layers conformance --json` in a fresh process of its own,
with everything at verify's defaults (`--depth` changes only the schedules' depth): the
model's schedules within the depth under the three configurations (fence off, on, and D-4's
other choice, replayed at once on both cores), then the probes, then the deep lockstep.
Rounds alternate the sides (A B C A B C ...), so a drift in the machine's speed hits them all.
The report gives each side's medians over the rounds, for the schedules' replay and the deep
lockstep (the seconds verify prints) and for the whole layer (the process from start to exit),
and each one's ratio to the in-process side. The pipe sides are the reference executor behind
`python -m atmostonce.executor.stdio` and, when `node` is on the PATH, the executor in plain
JavaScript (`examples/executor-js/main.js`); `--cmd` names others instead.

A benchmark, never a timed test; figures come from one run on this machine.

    python benchmarks/pipe.py [--depth D] [--rounds R] [--cmd "CMD ARGS" ...] [--no-deep]
                              [--json]
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not __package__:  # run as a script: measure this checkout, not an installed copy
    sys.path.insert(0, str(ROOT))

SERVED = (f"{shlex.quote(sys.executable)} -m atmostonce.executor.stdio "
          "atmostonce.executor:reference")
JS = "node examples/executor-js/main.js"
IN_PROCESS = "in process"


@dataclass(frozen=True)
class Run:
    """One side's one round: verify's own seconds for each check, and the whole process."""

    schedules_seconds: float
    deep_seconds: float
    layer_seconds: float
    schedules: int
    steps: int
    programs: int


@dataclass(frozen=True)
class Side:
    """One side's medians over the rounds, and their ratios to the in-process side's."""

    name: str
    schedules_seconds: float
    deep_seconds: float
    layer_seconds: float
    schedules_ratio: float
    deep_ratio: float
    layer_ratio: float
    schedules: int
    steps: int
    programs: int


def run_side(side: str, depth: int | None, deep: bool) -> Run:
    """Verify's conformance layer on one side, in a fresh process; its figures."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--side", side]
    argv += ["--depth", str(depth)] if depth is not None else []
    argv += [] if deep else ["--no-deep"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"verify's conformance failed on {side}:\n{done.stdout}{done.stderr}")
    return Run(**json.loads(done.stdout))


def _one_side(side: str, depth: int | None, deep: bool) -> Run:
    """The child's part: verify's conformance checks as verify runs them (the child of an
    `--executor-cmd` started as verify starts it), timed from before that start."""
    from atmostonce import verify
    from atmostonce.check.executors import pipe
    from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
    from atmostonce.spec.protocol import ExecutorFactory

    started = time.perf_counter()
    factory: ExecutorFactory
    if side == IN_PROCESS:
        path, factory = DEFAULT_EXECUTOR, load_factory(DEFAULT_EXECUTOR)
    else:
        path, factory = pipe.use(side), pipe.from_environment
    schedules = verify.check_conformance(path, factory, depth=depth)
    lockstep = verify.check_deep_lockstep(path, 0) if deep else None
    seconds = time.perf_counter() - started
    pipe.close_children()
    for check in (schedules, lockstep):
        if check is not None and not check.ok:
            raise SystemExit(f"{check.name}: {check.summary}")
    none: dict[str, object] = {"seconds": 0.0, "programs": 0}
    deep_data = lockstep.data if lockstep is not None else none
    return Run(_float(schedules.data, "seconds"), _float(deep_data, "seconds"), seconds,
               int(_float(schedules.data, "schedules")), int(_float(schedules.data, "steps")),
               int(_float(deep_data, "programs")))


def _float(data: dict[str, object], name: str) -> float:
    value = data[name]
    assert isinstance(value, int | float), (name, value)
    return float(value)


def measure(sides: list[str], rounds: int, depth: int | None, deep: bool) -> list[Side]:
    runs: dict[str, list[Run]] = {side: [] for side in sides}
    for _ in range(rounds):
        for side in sides:
            runs[side].append(run_side(side, depth, deep))
    counts = {(r.schedules, r.steps) for side in sides for r in runs[side]}
    if len(counts) != 1:
        raise SystemExit(f"the sides replayed different schedules: {sorted(counts)}")

    def median(side: str, field: str) -> float:
        return statistics.median(float(getattr(r, field)) for r in runs[side])

    base = {field: median(sides[0], field)
            for field in ("schedules_seconds", "deep_seconds", "layer_seconds")}
    out = []
    for side in sides:
        mine = {field: median(side, field) for field in base}
        first = runs[side][0]
        out.append(Side(side, mine["schedules_seconds"], mine["deep_seconds"],
                        mine["layer_seconds"],
                        mine["schedules_seconds"] / base["schedules_seconds"],
                        mine["deep_seconds"] / base["deep_seconds"] if base["deep_seconds"]
                        else 0.0,
                        mine["layer_seconds"] / base["layer_seconds"],
                        first.schedules, first.steps, first.programs))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--depth", type=int, default=None,
                        help="schedule depth (default: verify's, 9)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (default 3)")
    parser.add_argument("--cmd", action="append", default=None,
                        help="an executor command over the pipe (repeat for several; default: "
                        "the reference executor served by atmostonce.executor.stdio, and the "
                        "JavaScript executor when node is on the PATH)")
    parser.add_argument("--no-deep", dest="deep", action="store_false",
                        help="leave out the deep lockstep (the schedules and probes only)")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.side is not None:
        print(json.dumps(asdict(_one_side(args.side, args.depth, args.deep))))
        return 0
    commands = args.cmd or [SERVED, *([JS] if shutil.which("node") else [])]
    sides = measure([IN_PROCESS, *commands], args.rounds, args.depth, args.deep)
    if args.json:
        print(json.dumps([asdict(side) for side in sides], indent=2))
        return 0
    first = sides[0]
    print(f"verify's conformance layer at its defaults (depth "
          f"{args.depth if args.depth is not None else 'default'}): {first.schedules:,} "
          f"schedules, {first.steps:,} steps, {first.programs:,} deep-lockstep programs; "
          f"median of {args.rounds} rounds per side, A B C ... in turn")
    print(f"  {'side':<60} {'schedules':>14} {'deep lockstep':>16} {'whole layer':>14}")
    for side in sides:
        print(f"  {side.name[:60]:<60} {side.schedules_seconds:7.1f} s {side.schedules_ratio:4.2f}x"
              f" {side.deep_seconds:7.1f} s {side.deep_ratio:4.2f}x"
              f" {side.layer_seconds:7.1f} s {side.layer_ratio:4.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
