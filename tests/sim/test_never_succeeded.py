"""An executor that breaks no property in any one history can still be useless: one that never
hands an attempt to a worker records every call failed as never run, which the page allows any
single call. Across verify's campaign, where the tools return nine times in ten, no succeeded
record of an effect class fails the simulation layer (TC-REC-SUCC)."""

from __future__ import annotations

import pytest

from atmostonce import verify
from atmostonce.check.executors.loading import load_factory
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.state import Attempt
from atmostonce.mutation.stages import STAGES
from atmostonce.spec.protocol import Executor, ExecutorConfig


class _HandsOutNothing(ReferenceExecutor):
    def next_attempt(self) -> Attempt | None:
        return None


def hands_out_nothing(config: ExecutorConfig) -> Executor:
    """Answers every worker's poll with no work."""
    return _HandsOutNothing(config)


PATH = f"{__name__}:hands_out_nothing"


@pytest.mark.clause("TC-REC-SUCC")
def test_a_campaign_where_no_call_of_a_class_succeeds_fails_the_simulation_layer() -> None:
    checked = verify.check_simulation(PATH, hands_out_nothing)
    assert not checked.ok
    assert "failing seeds" in checked.summary
    assert any("call recorded succeeded in 300 seeds" in line for line in checked.details)
    assert checked.data["never_succeeded"] == ["read", "idempotent_write",
                                               "non_idempotent_write", "unclassified"]
    reference = verify.check_simulation("atmostonce.executor:reference",
                                        load_factory("atmostonce.executor:reference"))
    assert reference.ok
    assert reference.data["never_succeeded"] == []


def test_the_mutation_pipelines_first_stage_kills_it_too() -> None:
    stage = next(s for s in STAGES if s.name == "simulation-20")
    verdict = stage.check(PATH, hands_out_nothing)
    assert verdict.killed
    assert "call succeeded in 20 seeds" in verdict.detail
