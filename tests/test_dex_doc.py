"""`docs/dex.md` sets atmostonce's answers beside the real Dex's published ones: one table row
for every decision and every finding of the clause registry, each with a mark, and a reason
wherever the mark says the two differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from atmostonce.spec.clauses import ClauseKind, all_clauses

DOC = Path(__file__).resolve().parent.parent / "docs" / "dex.md"
MARKS = ("agrees", "differs", "not published")


def rows() -> dict[str, list[str]]:
    """The table's rows by their id, each as its cells."""
    found: dict[str, list[str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith(("| Id ", "| ---")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        found[cells[0]] = cells
    return found


@pytest.mark.clause("D-4", "F-7")
def test_every_decision_and_finding_has_one_row_with_a_mark_and_a_source() -> None:
    table = rows()
    wanted = {c.id for c in all_clauses() if c.kind is not ClauseKind.PAGE}
    assert set(table) == wanted
    for cid, cells in table.items():
        assert len(cells) == 6, (cid, cells)
        _, page, ours, dex, mark, why = cells
        assert all((page, ours, dex)), cid
        assert mark.startswith(MARKS), (cid, mark)
        if mark.startswith("differs"):
            assert why, f"{cid} differs from Dex without a reason"


@pytest.mark.clause("D-4")
def test_d4_is_marked_as_agreeing_with_dex_and_names_the_kept_option() -> None:
    _, _, ours, dex, mark, _ = rows()["D-4"]
    assert mark.startswith("agrees")
    assert "cancel_records_failed" in ours
    assert "agents/v0.2.0" in dex
