"""Reading a parsed TOML document with every key accounted for: typed getters whose one-line
error names the file and the dotted key, and a check that no key was left unread, so a
misspelt setting is refused instead of quietly ignored."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeVar

from atmostonce.sim import distributions
from atmostonce.sim.distributions import Distribution
from atmostonce.spec.errors import SpecError

T = TypeVar("T")


class Table:
    """One TOML table of a file, known by its dotted name (`executor`, `tools.refund`)."""

    def __init__(self, data: Mapping[str, object], name: str, file: str) -> None:
        self.data = data
        self.name = name
        self.file = file
        self.read: set[str] = set()

    def fail(self, key: str, message: str) -> SpecError:
        return SpecError(f"{self.file}: {self.key(key)}: {message}")

    def key(self, key: str) -> str:
        return f"{self.name}.{key}" if self.name and key else self.name or key

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str) -> object | None:
        self.read.add(key)
        return self.data.get(key)

    def number(self, key: str, default: float, *, low: float = 0.0, above: bool = False,
               high: float | None = None, unit: str = "a number") -> float:
        """A finite number >= `low` (> `low` with `above`), at most `high`."""
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"expected {unit}, got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            raise self.fail(key, f"expected a finite number, got {value!r}")
        if number < low or (above and number == low) or (high is not None and number > high):
            bound = f"{'>' if above else '>='} {low:g}"
            if high is not None:
                bound = f"between {low:g} and {high:g}"
            raise self.fail(key, f"expected {unit} {bound}, got {value!r}")
        return number

    def seconds(self, key: str, default: float, positive: bool = True) -> float:
        return self.number(key, default, above=positive, unit="a number of seconds")

    def share(self, key: str, default: float) -> float:
        """A probability."""
        return self.number(key, default, high=1.0, unit="a probability")

    def whole(self, key: str, default: int, low: int = 1, high: int = 1_000_000) -> int:
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected a whole number, got {value!r}")
        if not low <= value <= high:
            raise self.fail(key, f"expected a whole number between {low:,} and {high:,}, "
                            f"got {value!r}")
        return value

    def span(self, key: str, default: tuple[int, int], low: int = 1,
             high: int = 1000) -> tuple[int, int]:
        """A whole number, or [min, max] of whole numbers."""
        value = self.raw(key)
        if value is None:
            return default
        if isinstance(value, list):
            if len(value) != 2 or not all(_whole(v) for v in value):
                raise self.fail(key, f"expected a whole number or [min, max], got {value!r}")
            first, last = int(value[0]), int(value[1])
        elif _whole(value):
            first = last = int(value)  # type: ignore[call-overload]
        else:
            raise self.fail(key, f"expected a whole number or [min, max], got {value!r}")
        if not low <= first <= last <= high:
            raise self.fail(key, f"expected {low:,} <= min <= max <= {high:,}, got {value!r}")
        return first, last

    def flag(self, key: str, default: bool | None) -> bool | None:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {value!r}")
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {value!r}")
        return value

    def choice(self, key: str, known: Sequence[str]) -> str | None:
        value = self.text(key)
        if value is not None and value not in known:
            raise self.fail(key, f"unknown value {value!r} (known: {', '.join(known)})")
        return value

    def distribution(self, key: str, default: Distribution) -> Distribution:
        value = self.raw(key)
        if value is None:
            return default
        return distributions.parse(value, lambda message: self.fail(key, message))

    def table(self, key: str) -> Table:
        """The sub-table `key`, empty when absent."""
        value = self.raw(key)
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise self.fail(key, f"expected a table, got {value!r}")
        return Table(value, self.key(key), self.file)

    def tables(self, key: str) -> list[Mapping[str, object]]:
        """The array of tables `key` (`[[key]]`), empty when absent."""
        value = self.raw(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise self.fail(key, f"expected an array of tables ([[{key}]]), got {value!r}")
        return value

    def done(self) -> None:
        """Refuse the first key nothing read."""
        for key in self.data:
            if key not in self.read:
                known = ", ".join(sorted(self.read))
                raise self.fail(key, f"unknown key (known here: {known})")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
