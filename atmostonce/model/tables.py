"""Compiles the `transitions` definitions into integer tables the explorer steps in nanoseconds.

A `transitions` trigger costs microseconds; the explorer fires millions, so it looks up
`table.step[trigger][state]` instead. `tests/model/test_tables.py` proves table and machine
agree on every reachable component state and every trigger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from atmostonce.model.machines import MachineDef


@dataclass(frozen=True)
class Table:
    """A machine as integers: state names by index, and per trigger a map source -> destination."""

    machine: MachineDef
    states: tuple[str, ...]
    index: Mapping[str, int]
    step: Mapping[str, Mapping[int, int]]

    def fire(self, state: int, trigger: str) -> int | None:
        """The destination of `trigger` from `state`, or None when the machine forbids it."""
        return self.step.get(trigger, {}).get(state)

    def name(self, state: int) -> str:
        return self.states[state]


def compile_machine(machine: MachineDef) -> Table:
    index = {name: i for i, name in enumerate(machine.states)}
    step: dict[str, dict[int, int]] = {t: {} for t in machine.triggers}
    for edge in machine.edges:
        for source in edge.sources:
            src = index[source]
            if src in step[edge.trigger]:
                raise ValueError(
                    f"{machine.name}: trigger {edge.trigger} from {source} is not deterministic"
                )
            step[edge.trigger][src] = index[edge.dest]
    return Table(machine, machine.states, index, step)


def with_edge(table: Table, trigger: str, source: str, dest: str) -> Table:
    """A copy of `table` with one more edge; used only to build deliberately broken models."""
    step = {t: dict(m) for t, m in table.step.items()}
    step.setdefault(trigger, {})[table.index[source]] = table.index[dest]
    return Table(table.machine, table.states, table.index, step)
