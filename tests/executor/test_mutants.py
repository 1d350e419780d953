"""The executor mutants are well formed: each loads by its `module:function` path, satisfies the
protocol, overrides one method of the reference executor, and names a known clause and
property. Whether each is caught is the checking layers' business."""

from __future__ import annotations

import importlib

import pytest

from atmostonce.executor import mutants
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.mutants import EXECUTOR_MUTANTS, ExecutorMutant
from atmostonce.spec.clauses import CLAUSES
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PROPERTIES, PropertyId
from atmostonce.spec.protocol import Executor, ExecutorConfig


@pytest.mark.clause("TC-AMO-1", "TC-KEY-1", "TC-REC-1", "D-5", "D-6")
@pytest.mark.parametrize("mutant", list(EXECUTOR_MUTANTS.values()), ids=lambda m: m.name)
def test_mutant_loads_by_path_and_breaks_one_named_clause(mutant: ExecutorMutant) -> None:
    module, _, name = mutant.path.partition(":")
    assert module == "atmostonce.executor.mutants"
    factory = getattr(importlib.import_module(module), name)
    assert factory is mutant.factory
    executor = factory(ExecutorConfig(fence=True))
    assert isinstance(executor, Executor)
    assert isinstance(executor, ReferenceExecutor)
    overridden = [attr for attr, value in vars(type(executor)).items()
                  if callable(value) and not attr.startswith("__")]
    assert len(overridden) == 1, overridden
    assert hasattr(ReferenceExecutor, overridden[0])
    assert mutant.clause in CLAUSES
    assert mutant.expect in PROPERTIES
    assert mutant.summary


def test_there_are_enough_distinct_mutants() -> None:
    assert len(EXECUTOR_MUTANTS) >= 8
    assert len({m.clause for m in EXECUTOR_MUTANTS.values()}) >= 8
    assert {"retry_non_idempotent", "second_worker", "did_not_run_after_reach",
            "approval_default_ignored", "policy_change_applies_to_asked_calls",
            "record_overwritten", "new_key_on_retry", "fence_ignored",
            "go_ahead_before_persist"} <= set(EXECUTOR_MUTANTS)
    assert all(name == m.name for name, m in EXECUTOR_MUTANTS.items())


def test_an_unknown_mutant_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(SpecError, match="retry_non_idempotent"):
        mutants.get("no_such_mutant")
    assert mutants.get("fence_ignored").expect == PropertyId.A_FENCE
