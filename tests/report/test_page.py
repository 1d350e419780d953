"""The page itself: every layer's section, coloured diagrams where a layer measured, the reason
where it did not (never zeros), and nothing fetched from the network."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atmostonce.chaos.report_page import HELD_BY_MAPPING, held_by_mapping_table
from atmostonce.check.history.call_edges import NOT_FROM_HISTORY
from atmostonce.model.check import choices_for
from atmostonce.model.config import ModelConfig
from atmostonce.model.edge_counts import count_edges
from atmostonce.model.explorer import Explorer
from atmostonce.model.system import System
from atmostonce.report.counts import layer_counts
from atmostonce.report.layers import model_section, not_checkable, spec_section
from atmostonce.report.page import Check, Page, Section, Table, render, write
from atmostonce.sim.report_page import HISTORY_MEANING, UNCOUNTED
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


def _history_page(tables: tuple[Table, ...] = ()) -> str:
    counts = layer_counts("runtime", HISTORY_MEANING, {},
                          dict.fromkeys(UNCOUNTED, NOT_FROM_HISTORY), keep_outside=True)
    return render(Page("t", "atmostonce chaos", "x", True,
                       (Section("runtime", (Check("chaos", True, "ok"),), counts=counts,
                                tables=tables),)))


def test_a_layer_says_once_which_machines_it_did_not_measure_and_why() -> None:
    html = _history_page()
    notes = re.findall(r'<p class="notmeasured" data-machines="([^"]*)">(.*?)</p>', html, re.S)
    assert len(notes) == 1, notes
    machines, text = notes[0]
    assert machines.split() == list(UNCOUNTED)
    assert text.startswith("Not measured in this layer: Attempt, Worker, Run, KeyedLedger "
                           "and PlainLedger, because a history names")
    assert html.count("Not measured in this layer") == 1
    drawn = re.findall(r'<div class="diagram" data-machine="(\w+)">', html)
    assert drawn == ["CallTool", "CallSingleAttemptTool"]


def test_the_chaos_page_lists_what_only_the_mapping_keeps_and_the_unknown_calls() -> None:
    held = held_by_mapping_table({"A-DOUBLE-RUN-SHAPE": "only with the mapping's lease <T-4>"})
    assert held is not None
    assert held_by_mapping_table({}) is None
    unknown = Table("Calls recorded outcome_unknown (1)", ("idempotency key", "tool"),
                    (("s1/t1/c1", "pay"),), "settle them")
    html = _history_page((held, unknown))
    table = html[html.index(f'data-title="{HELD_BY_MAPPING}"'):]
    table = table[: table.index("</div>")]
    assert "<td>A-DOUBLE-RUN-SHAPE</td><td>only with the mapping&#39;s lease &lt;T-4&gt;</td>" \
        in table
    assert "engine alone does not keep" in table
    assert "<th>idempotency key</th>" in html
    assert "<td>s1/t1/c1</td><td>pay</td>" in html
