"""Shrinking a failing fault schedule by delta debugging, with the workload left as it was.

The workload comes from its own random stream, so rerunning a seed with fewer faults keeps the
same sessions, calls, tool behaviour and answers; `ddmin` finds a schedule from which no
single fault (nor any chunk ddmin tries) can be removed without the property holding again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from atmostonce.sim.run import RunResult, run_seed
from atmostonce.spec.protocol import ExecutorFactory

ERROR = "executor error"
"""The shrink target of a run whose executor raised."""


def ddmin(items: Sequence[int], fails: Callable[[tuple[int, ...]], bool],
          budget: int = 200) -> tuple[tuple[int, ...], int]:
    """A 1-minimal subsequence of `items` that still `fails` (Zeller's ddmin), and the number
    of tests spent; stops early, keeping the smallest found, when `budget` runs out."""
    current = tuple(items)
    tests = 0
    if tests < budget:
        tests += 1
        if fails(()):
            return (), tests
    n = 2
    while len(current) >= 2 and tests < budget:
        size = len(current)
        chunks = [current[i * size // n:(i + 1) * size // n] for i in range(n)]
        reduced = False
        for chunk in chunks:
            if tests >= budget:
                break
            tests += 1
            if fails(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced:
            for chunk in chunks:
                if tests >= budget:
                    break
                rest = tuple(i for i in current if i not in chunk)
                tests += 1
                if fails(rest):
                    current, n, reduced = rest, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= size:
                break
            n = min(size, 2 * n)
    return current, tests


@dataclass(frozen=True)
class Shrunk:
    """The smallest schedule found that still breaks `property`, and its run."""

    property: str
    original: int
    kept: tuple[int, ...]
    tests: int
    result: RunResult


def shrink(failed: RunResult, factory: ExecutorFactory, budget: int = 200) -> Shrunk:
    """Shrink the fault schedule of a failed run, keeping its first violated property (or, if
    the executor raised, an error)."""
    if failed.ok:
        raise ValueError("only a failed run can be shrunk")
    target = failed.violations[0].property if failed.violations else ERROR
    seed = failed.seed
    profile = failed.scenario.profile.name
    start = failed.only if failed.only is not None else tuple(range(len(failed.scenario.faults)))

    origin = failed.origin

    def rerun(subset: tuple[int, ...], keep: bool, stop_on: str | None) -> RunResult:
        if origin is not None:
            return origin.rerun(factory, failed.executor, subset, keep, stop_on)
        return run_seed(seed, profile, factory, failed.executor, subset, keep, stop_on)

    def fails(subset: tuple[int, ...]) -> bool:
        run = rerun(subset, False, None if target == ERROR else target)
        if target == ERROR:
            return run.error is not None
        return any(v.property == target for v in run.violations)

    kept, tests = ddmin(start, fails, budget)
    final = rerun(kept, True, None)
    return Shrunk(target, len(start), kept, tests, final)
