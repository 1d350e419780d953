"""Distributions of durations a scenario file gives (how long a tool runs, how long a person
takes to answer, how long a crashed worker stays away), each sampled by its inverse CDF.

Sampling by the inverse CDF of one uniform number means that two scenarios differing only in a
distribution's parameters draw the same uniform numbers, so a sweep compares like with like.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from statistics import NormalDist

from atmostonce.spec.errors import SpecError

Z99 = NormalDist().inv_cdf(0.99)
"""The standard normal's 99th percentile: a log-normal's p99 is median * exp(sigma * Z99)."""
_EDGE = 1e-12
_UNIT = NormalDist()


@dataclass(frozen=True, slots=True)
class Fixed:
    value: float

    def at(self, u: float) -> float:
        return self.value

    def describe(self) -> str:
        return f"{self.value:g} s"


@dataclass(frozen=True, slots=True)
class Uniform:
    low: float
    high: float

    def at(self, u: float) -> float:
        return self.low + (self.high - self.low) * u

    def describe(self) -> str:
        return f"uniform {self.low:g}-{self.high:g} s"


@dataclass(frozen=True, slots=True)
class Exponential:
    mean: float

    def at(self, u: float) -> float:
        return -self.mean * math.log(1.0 - min(u, 1.0 - _EDGE))

    def describe(self) -> str:
        return f"exponential, mean {self.mean:g} s"


@dataclass(frozen=True, slots=True)
class LogNormal:
    """Given by its median and 99th percentile, as latency is usually quoted."""

    median: float
    p99: float

    def at(self, u: float) -> float:
        sigma = math.log(self.p99 / self.median) / Z99
        z = _UNIT.inv_cdf(min(max(u, _EDGE), 1.0 - _EDGE))
        return self.median * math.exp(sigma * z)

    def describe(self) -> str:
        return f"log-normal, median {self.median:g} s, p99 {self.p99:g} s"


Distribution = Fixed | Uniform | Exponential | LogNormal

FORMS = "a number of seconds, {median, p99}, {mean} or {min, max}"
"""What a distribution may be written as, for error messages."""


def parse(value: object, fail: Callable[[str], SpecError]) -> Distribution:
    """The distribution `value` (a parsed TOML value) describes; `fail(message)` makes the
    error naming the file and key."""
    if _is_number(value):
        return Fixed(_seconds(value, "", fail))
    if not isinstance(value, Mapping):
        raise fail(f"expected {FORMS}, got {value!r}")
    keys = frozenset(value)
    if keys == {"median", "p99"}:
        median = _seconds(value["median"], "median", fail, positive=True)
        p99 = _seconds(value["p99"], "p99", fail, positive=True)
        if p99 <= median:
            raise fail(f"p99 ({p99:g}) must be above the median ({median:g})")
        return LogNormal(median, p99)
    if keys == {"mean"}:
        return Exponential(_seconds(value["mean"], "mean", fail, positive=True))
    if keys == {"min", "max"}:
        low = _seconds(value["min"], "min", fail)
        high = _seconds(value["max"], "max", fail)
        if high < low:
            raise fail(f"max ({high:g}) is below min ({low:g})")
        return Uniform(low, high)
    raise fail(f"expected {FORMS}, got the keys {', '.join(sorted(keys)) or 'none'}")


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _seconds(value: object, part: str, fail: Callable[[str], SpecError],
             positive: bool = False) -> float:
    where = f"{part}: " if part else ""
    if not _is_number(value):
        raise fail(f"{where}expected a number of seconds, got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number):
        raise fail(f"{where}expected a finite number of seconds, got {value!r}")
    if number < 0 or (positive and number == 0):
        raise fail(f"{where}expected seconds {'> 0' if positive else '>= 0'}, got {value!r}")
    return number
