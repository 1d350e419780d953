"""The clause registry: every clause is implemented and pinned, ids are sound, the CLI lists it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce import verify
from atmostonce.check.clauses import coverage
from atmostonce.spec.clauses import Clause, ClauseKind, FindingId, all_clauses
from atmostonce.spec.properties import PropertyId

PAGE_ANCHORS = {
    "tool-policies-and-approvals", "effect-classes", "require-approval", "tool-call-outcomes",
    "tool-runs-twice", "reconcile-outcome-unknown",
}


@pytest.mark.parametrize("clause", all_clauses(), ids=lambda c: c.id)
def test_every_clause_has_code_and_a_test(clause: Clause) -> None:
    rows = {row.clause.id: row for row in coverage.matrix()}
    row = rows[clause.id]
    assert row.code, f"{row.clause.id} is named by no code"
    assert row.tests, f"{row.clause.id} is pinned by no test"


def test_no_code_or_test_names_an_unknown_clause() -> None:
    stray = coverage.unknown_ids(coverage.named_in_code(), coverage.pinned_by_tests())
    assert stray == {}


def test_clauses_are_unique_anchored_and_decisions_answered() -> None:
    ids = [c.id for c in all_clauses()]
    assert len(ids) == len(set(ids))
    for clause in all_clauses():
        assert clause.anchor in PAGE_ANCHORS
        assert clause.summary
        if clause.kind is not ClauseKind.PAGE:
            assert clause.answer
            assert clause.reason


def test_finding_id_names_every_finding_after_its_id() -> None:
    named = {name: cid for name, cid in vars(FindingId).items() if name.isupper()}
    assert all(name == cid.replace("-", "_") for name, cid in named.items())
    assert set(named.values()) == {c.id for c in all_clauses() if c.kind is ClauseKind.FINDING}


def test_coverage_check_fails_when_a_clause_loses_its_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert verify.check_clause_coverage().ok
    monkeypatch.setattr(coverage, "pinned_by_tests", dict)
    result = verify.check_clause_coverage()
    assert not result.ok
    assert any(line.startswith("TC-POL-1: no test") for line in result.details)


def test_every_property_id_the_project_names_is_a_property() -> None:
    named = coverage.property_ids_named()
    assert PropertyId.A_ONE_RECORD in named
    assert coverage.unknown_property_ids(named) == {}


def test_a_misspelt_property_id_fails_the_coverage_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    misspelt = PropertyId.A_ONE_RECORD + "D"
    module = tmp_path / "test_typo.py"
    module.write_text(f'assert violation.property == "{PropertyId.A_ONE_RECORD}"\n'
                      f'assert "S-RECORD-read-failed" in witnessed  # S-RECORD-* is a family\n'
                      f'assert violation.property == "{misspelt}"\n')
    named = coverage.property_ids_named([tmp_path])
    assert set(named) == {PropertyId.A_ONE_RECORD, "S-RECORD-read-failed", misspelt}
    assert coverage.unknown_property_ids(named) == {misspelt: {f"{module}:3"}}
    monkeypatch.setattr(coverage, "PROPERTY_TEXTS", (*coverage.PROPERTY_TEXTS, module))
    result = verify.check_clause_coverage()
    assert not result.ok
    assert result.details == [f"{misspelt}: unknown property id named at {module}:3"]


def test_clauses_json_lists_every_clause_with_code_and_tests() -> None:
    done = subprocess.run([sys.executable, "-m", "atmostonce", "clauses", "--json"],
                          capture_output=True, text=True, check=True)
    rows = json.loads(done.stdout)
    assert {row["id"] for row in rows} == {c.id for c in all_clauses()}
    for row in rows:
        assert {"id", "anchor", "summary", "code", "tests"} <= set(row)
        assert row["tests"]
