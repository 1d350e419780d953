"""The compiled tables agree with the `transitions` machines they come from."""

from __future__ import annotations

import pytest
from transitions import MachineError

from atmostonce.model.check import DEFAULT
from atmostonce.model.explorer import Explorer
from atmostonce.model.machines import ALL_MACHINES, MachineDef
from atmostonce.model.naive import NaiveSystem
from atmostonce.model.system import System
from atmostonce.model.tables import compile_machine


class Holder:
    state: str


@pytest.mark.parametrize("machine", ALL_MACHINES, ids=lambda m: m.name)
def test_table_and_machine_agree_on_every_state_and_trigger(machine: MachineDef) -> None:
    table = compile_machine(machine)
    holder = Holder()
    built = machine.build(holder)
    for state in machine.states:
        for trigger in machine.triggers:
            built.set_state(state, model=holder)
            try:
                holder.trigger(trigger)  # type: ignore[attr-defined]
                expected: str | None = holder.state
            except MachineError:
                expected = None
            got = table.fire(table.index[state], trigger)
            assert (table.name(got) if got is not None else None) == expected, (state, trigger)


def test_machine_driven_model_reaches_the_same_states_as_the_tables() -> None:
    """The whole model stepped by `transitions` machines, without symmetry reduction or memo,
    reaches exactly the states the table-driven explorer reaches, up to renaming workers."""
    config = DEFAULT.with_(faults=1, policy_changes=0, reconcile_crashes=0)
    fast = Explorer(System(config), stop_at_first=False)
    fast_result = fast.run()
    naive = Explorer(NaiveSystem(config), stop_at_first=False)
    naive_result = naive.run()
    assert not fast_result.violations
    assert not naive_result.violations
    fast_orbits = {orbit(fast.system, s) for s in fast.states}
    naive_orbits = {orbit(naive.system, s) for s in naive.states}
    assert naive_orbits == fast_orbits
    assert len(fast_orbits) == fast_result.states
    assert naive_result.states > fast_result.states


def orbit(system: System, state: tuple[int, ...]) -> tuple[object, ...]:
    """A representative of the state's orbit under renaming workers, independent of how a
    system numbers its calls: the smallest of all renamings, calls spelled out in full."""
    from itertools import permutations

    from atmostonce.model.layout import ABW, AW, NG, RUNS

    nw = system.workers
    best: tuple[object, ...] | None = None
    for perm in permutations(range(nw)):
        new_of = {old: new for new, old in enumerate(perm)}
        calls = []
        for call in system.calls_of(state):
            c: list[object] = list(call)
            c[AW] = new_of.get(call[AW], -1)
            c[ABW] = new_of.get(call[ABW], -1)
            c[RUNS] = tuple(sorted((new_of[w], rs, an) for w, rs, an in system.runs(call[RUNS])))
            calls.append(tuple(c))
        key = (state[:NG], tuple(state[NG + old] for old in perm),
               tuple(sorted(calls, key=repr)))
        if best is None or repr(key) < repr(best):
            best = key
    assert best is not None
    return best
