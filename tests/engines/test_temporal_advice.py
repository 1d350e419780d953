"""docs/engines.md's "What to do on Temporal" names each property the mapping keeps only by its
lease, as the chaos verdict does, and the findings each step answers."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_temporal_advice_names_what_holds_only_with_the_lease() -> None:
    pytest.importorskip("temporalio")
    from atmostonce.engines.temporal.adapter import LEASE_HOLDS

    text = (ROOT / "docs" / "engines.md").read_text()
    section = text.split("### What to do on Temporal", 1)[1].split("\n## ", 1)[0]
    assert LEASE_HOLDS
    assert all(pid in section for pid in LEASE_HOLDS)
    assert all(f"({finding}" in section or f"{finding})" in section or f"{finding}," in section
               for finding in ("T-1", "T-2", "T-3", "T-4", "T-5", "T-7", "T-10"))
