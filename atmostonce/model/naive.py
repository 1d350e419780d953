"""The same model stepped the slow, obvious way: every component transition fired on a
`transitions` machine, no memo, no symmetry reduction.

It exists to be measured against (`benchmarks/explore.py`) and to cross-check the compiled
tables: both systems must reach the same states up to symmetry.
"""

from __future__ import annotations

from transitions import Machine, MachineError

from atmostonce.model.call_steps import ModelError
from atmostonce.model.choices import ModelChoices
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import State
from atmostonce.model.system import System
from atmostonce.model.tables import Table


class _Model:
    """What a `transitions` machine binds its `state` attribute to."""

    state: str


class _NoMemo(dict):  # type: ignore[type-arg]
    """A memo that never remembers, so every transition is computed afresh."""

    def get(self, key: object, default: object = None) -> object:
        return default

    def __setitem__(self, key: object, value: object) -> None:
        pass


class NaiveSystem(System):
    """`System` with each component step taken by a `transitions` machine."""

    def __init__(self, config: ModelConfig, choices: ModelChoices | None = None) -> None:
        super().__init__(config, choices)
        self._machines: dict[int, tuple[Machine, _Model]] = {}
        self._local_memo = _NoMemo()
        self._event_memo = _NoMemo()
        self._ws_memo = _NoMemo()

    def _fire(self, table: Table, state: int, trigger: str) -> int:
        pair = self._machines.get(id(table))
        if pair is None:
            model = _Model()
            pair = (table.machine.build(model), model)
            self._machines[id(table)] = pair
        machine, model = pair
        machine.set_state(table.states[state], model=model)
        try:
            model.trigger(trigger)  # type: ignore[attr-defined]
        except MachineError:
            raise ModelError(
                f"{table.machine.name} cannot fire {trigger} from {table.states[state]}"
            ) from None
        self.fired.add((id(table), state, trigger))
        return table.index[model.state]

    def canonical(self, state: State) -> State:
        return state
