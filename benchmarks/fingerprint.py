"""Fingerprints of behaviour, for changes that must not change any: the explorer's state
counts over several bounds, the conformance layer's schedule and step counts, and a SHA-256
over every entry of every history of a seeded simulation campaign.

Run it before and after a change and compare the two JSON files; any difference is a change
of behaviour (the checkout's own path, which an executor's error may quote, reads
`<checkout>`). The explorer and conformance figures come from the `atmostonce` command (the
paths a user types), the simulation digest from the simulator's own entries.

    python benchmarks/fingerprint.py [--seeds N] [--out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if not __package__:  # run as a script: fingerprint this checkout, not an installed copy
    sys.path.insert(0, str(ROOT))

from atmostonce.check.history.entries import describe  # noqa: E402
from atmostonce.executor import reference  # noqa: E402
from atmostonce.sim.faults import PROFILES  # noqa: E402
from atmostonce.sim.run import run_seed  # noqa: E402

BOUNDS: tuple[tuple[str, ...], ...] = (
    (),
    ("--fence",),
    ("--ledger", "key"),
    ("--ledger", "business"),
    ("--calls", "2", "--faults", "1"),
    ("--workers", "3", "--faults", "1"),
    ("--max-attempts", "3", "--faults", "1"),
)
"""Explorer bounds fingerprinted: the default and one step along each axis it can take."""

EXPLORER_FIELDS = ("ok", "states", "transitions", "depth", "quiescent_states", "witnessed",
                   "unwitnessed", "violations", "coverage")


def command(*args: str) -> dict[str, Any]:
    """The JSON object `atmostonce ARGS --json` prints."""
    done = subprocess.run([sys.executable, "-m", "atmostonce", *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"atmostonce {' '.join(args)} exited {done.returncode}: "
                         f"{done.stderr.strip()}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def explorer() -> dict[str, Any]:
    out = {}
    for bound in BOUNDS:
        report = command("check", *bound)
        out[" ".join(bound) or "default"] = {k: report[k] for k in EXPLORER_FIELDS}
    for name in mutants("model"):
        report = command("check", "--mutant", name)
        out[f"--mutant {name}"] = {k: report[k] for k in ("ok", "states", "violations")}
    return out


def mutants(kind: str) -> list[str]:
    """The names `atmostonce mutants` lists for `kind` (model or executor)."""
    done = subprocess.run([sys.executable, "-m", "atmostonce", "mutants"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return [line.split()[1] for line in done.stdout.splitlines()
            if line.split()[:1] == [kind]]


def conformance() -> dict[str, Any]:
    """The reference executor's schedule and step counts, and for each executor mutant the
    summary of the simulation layer that catches it (its first violation)."""
    check = command("verify", "--layers", "conformance")["checks"][0]
    out: dict[str, Any] = {"reference": {k: check[k] for k in ("ok", "schedules", "steps",
                                                                 "depth")}}
    for name in mutants("executor"):
        report = command("simulate", "--seeds", "40", "--executor",
                         f"atmostonce.executor.mutants:{name}")
        out[name] = {k: report[k] for k in sorted(report) if k not in WALL_FIELDS}
    return out


WALL_FIELDS = frozenset({"seconds", "calls_per_second", "cpu_seconds", "calls_per_cpu_second"})
"""Fields of `simulate --json` that measure the machine, not the behaviour."""


def simulation(seeds: int) -> dict[str, Any]:
    """Per profile, a digest over every entry of every seed's history and its statistics."""
    out = {}
    for name in PROFILES:
        digest = hashlib.sha256()
        entries = 0
        for seed in range(seeds):
            run = run_seed(seed, name, reference, keep_history=True)
            assert run.history is not None
            for entry in run.history.entries:
                digest.update(describe(entry).encode())
                digest.update(b"\n")
                entries += 1
            digest.update(repr((_stable(run.stats), run.violations, run.error)).encode())
        out[name] = {"seeds": seeds, "entries": entries, "sha256": digest.hexdigest()}
    return out


def _stable(value: object) -> object:
    """`value`'s fields with every set sorted: a set's printed order changes with the
    process's hash seed, the behaviour it fingerprints does not."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple((f.name, _stable(getattr(value, f.name)))
                     for f in dataclasses.fields(value))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value, key=repr))
    if isinstance(value, tuple):
        return tuple(_stable(v) for v in value)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=480, help="seeds per profile (480)")
    parser.add_argument("--out", type=Path, help="also write the fingerprint to FILE")
    parser.add_argument("--skip", default="", help="comma-separated parts to leave out: "
                        "explorer, conformance, simulation")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    started = time.monotonic()
    result: dict[str, Any] = {}
    if "simulation" not in skip:
        result["simulation"] = simulation(args.seeds)
    if "explorer" not in skip:
        result["explorer"] = explorer()
    if "conformance" not in skip:
        result["conformance"] = conformance()
    text = json.dumps(result, indent=2, sort_keys=True).replace(str(ROOT), "<checkout>")
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    print(f"fingerprinted in {time.monotonic() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
