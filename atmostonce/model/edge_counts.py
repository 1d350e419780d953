"""How often each component edge is taken in the state graph the explorer built.

The explorer memoises component steps, so its own `fired` set says only whether an edge was
taken. This pass steps every explored state again with the memos off and counts each component
edge once per enumerated transition that takes it: the figures the report colours diagrams by.
It runs only when asked, after the exploration, so the check itself is not slowed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from atmostonce.model.layout import State
from atmostonce.model.system import System
from atmostonce.model.tables import Table

EdgeKey = tuple[str, str, str, str]
"""(machine, source state, trigger, destination state)."""


class _NoMemo(dict[Any, Any]):
    """A memo that never remembers, so every transition fires its component edges afresh."""

    def get(self, key: object, default: object = None) -> object:
        return default

    def __setitem__(self, key: object, value: object) -> None:
        pass


def count_edges(system: System, states: Iterable[State],
                keep: Callable[[State, State], bool] | None = None) -> dict[EdgeKey, int]:
    """Per component edge, how many transitions out of `states` take it; with `keep`, a state
    whose successors `keep(state, successor)` refuses for some transition raises ValueError,
    since the pass cannot tell that transition's edges from its siblings'."""
    counts: dict[EdgeKey, int] = {}
    fire = system._fire

    def counted(table: Table, state: int, trigger: str) -> int:
        dest = fire(table, state, trigger)
        key = (table.machine.name, table.states[state], trigger, table.states[dest])
        counts[key] = counts.get(key, 0) + 1
        return dest

    memos = ("_local_memo", "_event_memo", "_ws_memo")
    saved = {name: getattr(system, name) for name in memos}
    for name in memos:
        setattr(system, name, _NoMemo())
    system._fire = counted  # type: ignore[method-assign]
    try:
        for state in states:
            for succ in system.successors(state):
                if keep is not None and not keep(state, succ.state):
                    raise ValueError(f"a transition {succ.label} out of a counted state is "
                                     "not counted, and its edges cannot be told apart")
    finally:
        del system._fire
        for name, memo in saved.items():
            setattr(system, name, memo)
    return counts
