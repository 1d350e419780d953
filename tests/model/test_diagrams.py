"""The committed diagrams are the ones the model's definitions draw today."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from atmostonce.model import diagrams
from atmostonce.model.machines import ALL_MACHINES, MachineDef

COMMITTED = Path(__file__).resolve().parents[2] / "diagrams"


@pytest.mark.parametrize("machine", ALL_MACHINES, ids=lambda m: m.name)
def test_committed_dot_is_not_stale(machine: MachineDef) -> None:
    committed = COMMITTED / f"{machine.name}.dot"
    assert committed.exists(), f"run `atmostonce diagrams` to create {committed}"
    assert committed.read_text() == diagrams.dot_source(machine), (
        f"{committed} is stale: run `atmostonce diagrams`")


def test_diagrams_draw_svg_where_dot_exists(tmp_path: Path) -> None:
    written, note = diagrams.write(tmp_path)
    assert len(written) == len(ALL_MACHINES)
    if shutil.which("dot") is None:
        assert "not installed" in note
        pytest.skip("Graphviz's dot is not installed here")
    for w in written:
        assert w.svg is not None
        assert w.svg.read_text().lstrip().startswith("<?xml")
