"""Transition counts of one layer, per component machine, checked against the machine's edges.

A layer either measured a machine (every edge has a count, zero meaning never taken) or did not
(`why` says so): the page never shows zeros for a machine a layer could not observe. A counted
edge the machine does not have is a bug of the counting and raises, except where a layer judges
an executor under test: what a broken executor did outside the machine is kept apart, in
`outside`, for the page to show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from atmostonce.model.diagrams import edges as machine_edges
from atmostonce.model.machines import ALL_MACHINES, MachineDef

EdgeKey = tuple[str, str, str, str]
"""(machine, source state, trigger, destination state)."""
Edge = tuple[str, str, str]
"""(source state, trigger, destination state) of one machine."""

MACHINES: dict[str, MachineDef] = {m.name: m for m in ALL_MACHINES}


@dataclass(frozen=True)
class MachineCounts:
    """One machine in one layer: the count of every edge, or None and why it was not measured."""

    machine: str
    taken: Mapping[Edge, int] | None
    why: str = ""

    @property
    def never(self) -> list[Edge]:
        return [] if self.taken is None else [e for e, n in self.taken.items() if n == 0]


@dataclass(frozen=True)
class LayerCounts:
    """What one layer ran, as transition counts: `meaning` says what a count is."""

    layer: str
    meaning: str
    machines: tuple[MachineCounts, ...]
    outside: tuple[tuple[EdgeKey, int], ...] = ()


def layer_counts(layer: str, meaning: str, counts: Mapping[EdgeKey, int],
                 not_measured: Mapping[str, str] | None = None,
                 keep_outside: bool = False) -> LayerCounts:
    """Counts of every machine, zero-filled where measured; ValueError for a count of an edge
    or machine that does not exist (unless `keep_outside`, for an executor's history) or of a
    machine said not to be measured."""
    skipped = dict(not_measured or {})
    unknown = [m for m in skipped if m not in MACHINES]
    if unknown:
        raise ValueError(f"{layer}: no machine named {unknown[0]}")
    taken: dict[str, dict[Edge, int]] = {
        name: dict.fromkeys(machine_edges(m), 0) for name, m in MACHINES.items()
        if name not in skipped
    }
    outside: dict[EdgeKey, int] = {}
    for key, n in counts.items():
        machine, source, trigger, dest = key
        if machine in skipped:
            raise ValueError(f"{layer}: {machine} is counted but said not to be measured")
        row = taken.get(machine)
        edge = (source, trigger, dest)
        if row is None or edge not in row:
            if not keep_outside:
                raise ValueError(f"{layer}: counted an edge {machine} does not have: "
                                 f"{source} --{trigger}--> {dest}")
            outside[key] = outside.get(key, 0) + n
            continue
        row[edge] += n
    machines = tuple(
        MachineCounts(name, taken[name]) if name in taken else
        MachineCounts(name, None, skipped[name]) for name in MACHINES
    )
    return LayerCounts(layer, meaning, machines, tuple(sorted(outside.items())))
