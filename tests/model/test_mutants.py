"""Every model mutant is caught by the property it breaks, with a readable counterexample."""

from __future__ import annotations

import pytest

from atmostonce.model import check, mutants
from atmostonce.model.mutants import ModelMutant


@pytest.mark.clause("TC-EFF-NONIDEM", "TC-REC-NOTRUN", "TC-AMO-1", "TC-REC-EXHAUST-OTHER",
                    "TC-APR-2", "D-5", "D-12", "TC-REC-1", "TC-KEY-1", "TC-SNAP-1", "D-6",
                    "TC-RCN-ONCE", "TC-REC-EXHAUST-READ", "TC-REC-SUCC")
@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=lambda m: m.name)
def test_mutant_is_caught_with_a_counterexample(mutant: ModelMutant) -> None:
    config = check.with_mutant(check.DEFAULT, mutant.name)
    report = check.run(config, with_findings=False)
    caught = {t.property for t in report.violations}
    assert mutant.expect in caught, f"{mutant.name} was caught by {caught or 'nothing'}"
    trace = next(t for t in report.violations if t.property == mutant.expect)
    assert trace.steps, "a counterexample has at least one step"
    assert not report.ok


def test_at_least_the_mutants_the_issue_names_exist() -> None:
    names = {m.name for m in mutants.MUTANTS}
    assert {"retry_non_idempotent", "did_not_run_after_reach", "second_worker",
            "retry_after_unknown", "approval_default_skipped", "reach_after_go_ahead"} <= names
    assert len({m.expect for m in mutants.MUTANTS}) >= 10
