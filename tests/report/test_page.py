"""The page itself: every layer's section, coloured diagrams where a layer measured, the reason
where it did not (never zeros), and nothing fetched from the network."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atmostonce.model.check import choices_for
from atmostonce.model.config import ModelConfig
from atmostonce.model.edge_counts import count_edges
from atmostonce.model.explorer import Explorer
from atmostonce.model.system import System
from atmostonce.report.layers import model_section, not_checkable, spec_section
from atmostonce.report.page import Check, Page, render, write
from atmostonce.spec.errors import SpecError

SMALL = ModelConfig(calls=1, faults=1, reasks=0, policy_changes=0, reconcile_crashes=0)


def _page() -> str:
    system = System(SMALL, choices_for(SMALL))
    explorer = Explorer(system, stop_at_first=False)
    explorer.run()
    counts = count_edges(system, explorer.states)
    sections = (spec_section((Check("clause coverage", True, "64/64 <clauses>"),)),
                model_section(Check("exhaustive check", True, "small"), counts),
                not_checkable("simulation", "an engine runs on real processes"))
    return render(Page("t", "atmostonce verify", "x", True, sections))


def test_measured_layers_draw_every_machine_and_the_others_say_why() -> None:
    html = _page()
    model = html[html.index('id="layer-model"'):html.index('id="layer-simulation"')]
    assert len(re.findall(r'<div class="diagram" data-machine=', model)) == 7
    assert model.count("<svg") >= 7
    assert "Not measured in this layer" not in model
    for layer in ("spec", "simulation"):
        start = html.index(f'id="layer-{layer}"')
        end = html.find('<section', start + 1)
        part = html[start:end if end > 0 else len(html)]
        assert "Not measured in this layer" in part
        assert "<svg" not in part
        assert "data-machine" not in part


def test_text_is_escaped_and_nothing_comes_from_the_network() -> None:
    html = _page()
    assert "64/64 &lt;clauses&gt;" in html
    assert "<script" not in html
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", html)


def test_a_page_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    page = Page("t", "c", "s", True, ())
    with pytest.raises(SpecError, match="cannot write it"):
        write(page, tmp_path / "missing" / "r.html")
