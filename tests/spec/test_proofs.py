"""CrossHair confirms every contract of the spec, and catches a deliberately wrong copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from atmostonce.check.clauses import proofs


@pytest.mark.slow
@pytest.mark.clause("TC-POL-2", "TC-APR-2", "D-1", "D-7", "D-10")
def test_every_spec_postcondition_is_confirmed_over_all_paths() -> None:
    report = proofs.prove()
    assert report.failed == []
    assert report.unmatched == []
    assert len(report.confirmed) >= 25


def wrong_copy(tmp_path: Path, module: str, right: str, wrong: str) -> Path:
    """A copy of a spec module with one deliberate mistake, importable by CrossHair."""
    source = proofs.module_path(module).read_text()
    assert source.count(right) == 1, f"mutation anchor not found once in {module}"
    path = tmp_path / f"wrong_{module.rsplit('.', 1)[-1]}.py"
    path.write_text(source.replace(right, wrong))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("module", "right", "wrong", "function"), [
    ("atmostonce.spec.records",
     "if retries_allowed(effect) and attempts_made < max_attempts:",
     "if attempts_made < max_attempts:",
     "decide"),
    ("atmostonce.spec.approval",
     "(_S.REJECTED, _E.APPROVE): (_S.REJECTED, _R.ALREADY_REJECTED)",
     "(_S.REJECTED, _E.APPROVE): (_S.APPROVED, _R.ALREADY_REJECTED)",
     "answer"),
    ("atmostonce.spec.policy",
     "        return hinted_effect, PolicySource.FRAMEWORK_METADATA\n    if session_default",
     "        if session_default is not None:\n            return session_default, "
     "PolicySource.SESSION_DEFAULT\n        return hinted_effect, PolicySource."
     "FRAMEWORK_METADATA\n    if session_default",
     "choose_effect"),
])
def test_crosshair_finds_the_counterexample_in_a_wrong_copy(
    tmp_path: Path, module: str, right: str, wrong: str, function: str
) -> None:
    path = wrong_copy(tmp_path, module, right, wrong)
    report = proofs.prove([str(path)], per_condition_timeout=20, paths=[path])
    counterexamples = [why for _, why in report.failed if f"{function}(" in why]
    assert counterexamples, f"no counterexample for {function}: {report}"
