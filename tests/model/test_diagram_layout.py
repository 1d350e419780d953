"""Every diagram fits a page and reads there: Graphviz lays each one out at most about twice as
wide as tall (or tall as wide) and narrow enough to embed, no two labels overlap, and no line
runs through the legend. Judged on Graphviz's own layout of the DOT we write, plain and with
counts (the report's wider labels)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from atmostonce.model import diagrams
from atmostonce.model.machines import ALL_MACHINES, MachineDef
from atmostonce.model.overview import overview_dot
from tests.model.diagram_geometry import Layout, crossed, layout, overlapping, union

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")

MOST_RATIO = 2.0
"""Longer side over shorter side."""
WIDEST = 1100.0
"""Points: the report's column is about 1,100 px, so a diagram this wide (1,470 px) is shown at
three quarters of its size there, its 14 pt labels at about 14 px."""


def _counts(machine: MachineDef) -> dict[diagrams.Transition, int]:
    """Counts as wide as a long campaign's, and some edges never taken."""
    return {e: (0 if i % 4 == 3 else 123_456 * (i + 1)) for i, e in
            enumerate(diagrams.edges(machine))}


def _drawn(machine: MachineDef, counted: bool) -> Callable[[], str]:
    return lambda: diagrams.machine_dot(machine, _counts(machine) if counted else None)


DRAWINGS: dict[str, Callable[[], str]] = {
    **{m.name: _drawn(m, False) for m in ALL_MACHINES},
    **{f"{m.name} counted": _drawn(m, True) for m in ALL_MACHINES},
    "overview": overview_dot,
}


@pytest.fixture(scope="module")
def layouts() -> dict[str, Layout]:
    return {name: layout(draw()) for name, draw in DRAWINGS.items()}


def _shape(found: Layout) -> str:
    return f"{found.width:.0f} x {found.height:.0f} pt"


@pytest.mark.parametrize("name", list(DRAWINGS))
def test_a_diagram_is_at_most_twice_as_long_as_it_is_wide_and_fits_the_report(
        name: str, layouts: dict[str, Layout]) -> None:
    found = layouts[name]
    ratio = max(found.width / found.height, found.height / found.width)
    assert ratio <= MOST_RATIO, f"{name}: {_shape(found)}, ratio {ratio:.2f}"
    assert found.width <= WIDEST, f"{name}: {_shape(found)}"


@pytest.mark.parametrize("name", list(DRAWINGS))
def test_no_two_labels_overlap(name: str, layouts: dict[str, Layout]) -> None:
    clashes = [(a.owner, a.text, b.owner, b.text) for a, b in overlapping(layouts[name])]
    assert not clashes, f"{name}: {clashes}"


CROSSED = {"CallTool": 1, "CallTool counted": 1}
"""Labels an edge still runs through: Graphviz sets the retry loop's label right of
`attempting`, where the edge to outcome_unknown leaves (its last line is crossed)."""


@pytest.mark.parametrize("name", list(DRAWINGS))
def test_edges_keep_off_the_labels(name: str, layouts: dict[str, Layout]) -> None:
    found = [(t.owner, t.text, owner) for t, owner in crossed(layouts[name])]
    assert len(found) <= CROSSED.get(name, 0), f"{name}: {found}"


@pytest.mark.parametrize("name", list(DRAWINGS))
def test_no_line_runs_through_the_legend(name: str, layouts: dict[str, Layout]) -> None:
    """The legend is the graph's own label, set apart from the drawing."""
    found = layouts[name]
    legend = union([t.box for t in found.texts if t.owner == "graph"])
    crossing = {owner for owner, points in found.lines
                if any(legend[0] <= x <= legend[2] and legend[1] <= y <= legend[3]
                       for x, y in points)}
    assert not crossing, f"{name}: {sorted(crossing)} cross the legend {legend}"
    assert any("initial state" in t.text or "component machine" in t.text
               for t in found.texts if t.owner == "graph")


def test_the_checks_catch_the_old_wide_layout() -> None:
    """CallTool as it was drawn before (`wide-CallTool.dot`: left to right, labels on one line,
    the legend a cluster beside the states) is over four times as wide as tall, wider than the
    report, its retry loop's label lands on `approve` and an edge runs through it."""
    found = layout((Path(__file__).parent / "wide-CallTool.dot").read_text())
    assert found.width / found.height > 4
    assert found.width > WIDEST
    clashes = {frozenset((a.text, b.text)) for a, b in overlapping(found)}
    assert frozenset(("approve", "retry [infra_failure & attempts_left]")) in clashes
    assert [t.text for t, _ in crossed(found)] == ["retry [infra_failure & attempts_left]"]
