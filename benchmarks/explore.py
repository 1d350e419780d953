"""Benchmark: distinct states per second of the explorer against a naive explorer, each
reduction's effect and the speedup on several processes, in one run.

The real explorer (`atmostonce.model.explorer.Explorer` over `System`) explores the default
bound completely; the naive explorer (`benchmarks/naive_explorer.py`, the same model driven
through `transitions` machines) explores the same bound breadth-first until its time runs out,
and its rate is taken over the part it explored (the shallow part, whose smaller worlds are
the cheapest to copy). Both run in this one process, one after the other, so the ratio compares
them on the same machine under the same load.

The scale part explores one bound (the default, or `--faults N` for a smaller one) five ways
one after the other: as `check` does (symmetry, exact states), without symmetry, with 64-bit
fingerprints, with partial-order reduction, and on `--processes N` processes; each way's
states, wall and CPU seconds (this process and its children), states per second per core, the
partial-order reduction's states and seconds as fractions of `check`'s, and the speedup of N
processes over one. On a loaded machine the CPU seconds say more than the wall ones.

    python benchmarks/explore.py [--naive-seconds 25] [--processes 2] [--faults N] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shlex
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atmostonce.model.check import DEFAULT
from atmostonce.model.config import ModelConfig
from atmostonce.model.explorer import Explorer, Result
from atmostonce.model.parallel import ParallelExplorer
from atmostonce.model.system import System
from atmostonce.model.trace import config_json
from benchmarks.naive_explorer import NaiveExplorer, NaiveResult, orbit


def measure(naive_seconds: float) -> dict[str, Any]:
    """Run both explorers on the default bound and return every figure of the report."""
    config = DEFAULT
    real = Explorer(System(config))
    r: Result = real.run()
    naive = NaiveExplorer(config, seconds=naive_seconds)
    n: NaiveResult = naive.run()
    orbits = len({orbit(state) for state in naive.states})
    return {
        "config": config_json(config),
        "describe": config.describe(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": f"{platform.system()} {platform.machine()}",
        "transitions": version("transitions"),
        "real": {
            "states": r.states, "transitions": r.transitions, "depth": r.depth,
            "seconds": round(r.seconds, 3), "complete": r.complete,
            "states_per_second": round(r.states_per_second),
        },
        "naive": {
            "states": n.states, "expanded": n.expanded, "transitions": n.transitions,
            "depth": n.depth, "seconds": round(n.seconds, 3), "complete": n.complete,
            "time_limit": naive_seconds, "orbits": orbits,
            "states_per_second": round(n.states_per_second),
        },
        "ratio": round(r.states_per_second / n.states_per_second, 1)
        if n.states_per_second else None,
    }


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(explore: Callable[[], Result], cores: int) -> dict[str, Any]:
    cpu, wall = _cpu(), time.monotonic()
    r = explore()
    wall, cpu = time.monotonic() - wall, _cpu() - cpu
    return {"states": r.states, "transitions": r.transitions, "ok": r.ok,
            "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "processes": r.processes,
            "states_per_second": round(r.states / wall),
            "states_per_second_per_core": round(r.states / wall / cores)}


def measure_scale(config: ModelConfig, processes: int) -> dict[str, Any]:
    """Explore `config` as `check` does, without symmetry, with fingerprints, with
    partial-order reduction and on `processes` processes, one after the other."""
    ways = {
        "check": (lambda: Explorer(System(config)).run(), 1),
        "without symmetry": (lambda: Explorer(System(config), symmetry=False).run(), 1),
        "fingerprints": (lambda: Explorer(System(config), visited="fingerprint").run(), 1),
        "partial-order": (lambda: Explorer(System(config), reduction="por").run(), 1),
        f"{processes} processes": (
            lambda: ParallelExplorer(System(config), processes).run(), processes),
    }
    figures = {name: _timed(explore, cores) for name, (explore, cores) in ways.items()}
    one, many = figures["check"], figures[f"{processes} processes"]
    por = figures["partial-order"]
    return {"describe": config.describe(), "processes": processes, "ways": figures,
            "por_states": round(por["states"] / one["states"], 3),
            "por_cpu": round(por["cpu_seconds"] / one["cpu_seconds"], 2),
            "speedup": round(one["seconds"] / many["seconds"], 2),
            "cpu_ratio": round(many["cpu_seconds"] / one["cpu_seconds"], 2)}


def render_scale(scale: dict[str, Any]) -> list[str]:
    lines = ["", f"  scale: {scale['describe']}"]
    for name, f in scale["ways"].items():
        lines.append(f"    {name:<20} {f['states']:>10,} states {f['seconds']:>8.2f} s "
                     f"{f['cpu_seconds']:>8.2f} s CPU {f['states_per_second_per_core']:>8,} "
                     "states/s per core" + ("" if f["ok"] else " NOT OK"))
    lines.append(f"    partial-order reduction: {scale['por_states']}x the states in "
                 f"{scale['por_cpu']}x the CPU seconds of check's")
    lines.append(f"    speedup on {scale['processes']} processes: {scale['speedup']}x wall "
                 f"(their CPU seconds are {scale['cpu_ratio']}x one process's)")
    return lines


def render(figures: dict[str, Any], command: str) -> str:
    real, naive = figures["real"], figures["naive"]
    stop = ("explored completely" if naive["complete"]
            else f"stopped after {naive['seconds']:.1f} s")
    return "\n".join([
        "explorer benchmark: distinct states per second, one process on one core",
        f"  bound:  {figures['describe']} (atmostonce.model.check.DEFAULT)",
        f"  python: {figures['python']} on {figures['platform']}, "
        f"transitions {figures['transitions']}",
        "",
        "  real explorer (compiled tables, interned calls, memo, symmetry reduction):",
        f"    {real['states']:,} states, {real['transitions']:,} transitions, depth "
        f"{real['depth']}, {'complete' if real['complete'] else 'INCOMPLETE'}, "
        f"{real['seconds']:.2f} s",
        f"    {real['states_per_second']:,} states/s",
        "  naive explorer (transitions machines on cloned component objects, no reduction):",
        f"    {naive['states']:,} states ({naive['expanded']:,} expanded, "
        f"{naive['orbits']:,} orbits under renaming workers), "
        f"{naive['transitions']:,} transitions, depth {naive['depth']}, {stop}",
        f"    {naive['states_per_second']:,} states/s",
        "",
        f"  ratio: the real explorer finds distinct states {figures['ratio']}x as fast, though "
        "it also checks every property on every state and the naive one only enumerates",
        *render_scale(figures["scale"]),
        f"  reproduce: {command}",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/explore.py",
        description="Distinct states per second of the explorer and of a naive explorer of "
                    "the same model, measured in one run.")
    parser.add_argument("--naive-seconds", type=float, default=25.0,
                        help="how long the naive explorer may run (default 25)")
    parser.add_argument("--processes", type=int, default=2,
                        help="processes for the parallel way (default 2)")
    parser.add_argument("--faults", type=int, default=None,
                        help="the scale part's bound: the default bound with this many faults "
                        "(default: the default bound)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.naive_seconds <= 0:
        parser.error("--naive-seconds must be positive")
    if args.processes < 2:
        parser.error("--processes must be at least 2")
    if args.faults is not None and args.faults < 0:
        parser.error("--faults must be at least 0")
    command = shlex.join(["python", "benchmarks/explore.py",
                          *(sys.argv[1:] if argv is None else argv)])
    figures = measure(args.naive_seconds)
    bound = DEFAULT if args.faults is None else DEFAULT.with_(faults=args.faults)
    figures["scale"] = measure_scale(bound, args.processes)
    figures["command"] = command
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(render(figures, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
