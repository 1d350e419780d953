"""The model's step labels use exactly the step kinds `spec.step_kinds` names."""

from __future__ import annotations

from atmostonce.model.explorer import Explorer
from atmostonce.model.overview import BOUND
from atmostonce.model.system import System
from atmostonce.spec.step_kinds import StepKind


def test_the_model_takes_every_step_kind_and_no_other() -> None:
    named = {name: kind for name, kind in vars(StepKind).items() if name.isupper()}
    assert all(name == kind.upper() for name, kind in named.items())
    taken = Explorer(System(BOUND)).run().action_counts
    assert set(taken) == set(named.values())
