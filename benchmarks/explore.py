"""Benchmark: distinct states per second of the explorer against a naive explorer, in one run.

The real explorer (`atmostonce.model.explorer.Explorer` over `System`) explores the default
bound completely; the naive explorer (`benchmarks/naive_explorer.py`, the same model driven
through `transitions` machines) explores the same bound breadth-first until its time runs out,
and its rate is taken over the part it explored (the shallow part, whose smaller worlds are
the cheapest to copy). Both run in this one process, one after the other, so the ratio compares
them on the same machine under the same load.

    python benchmarks/explore.py [--naive-seconds 25] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atmostonce.model.check import DEFAULT
from atmostonce.model.explorer import Explorer, Result
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
        f"  reproduce: {command}",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/explore.py",
        description="Distinct states per second of the explorer and of a naive explorer of "
                    "the same model, measured in one run.")
    parser.add_argument("--naive-seconds", type=float, default=25.0,
                        help="how long the naive explorer may run (default 25)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.naive_seconds <= 0:
        parser.error("--naive-seconds must be positive")
    command = shlex.join(["python", "benchmarks/explore.py",
                          *(sys.argv[1:] if argv is None else argv)])
    figures = measure(args.naive_seconds)
    figures["command"] = command
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(render(figures, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
