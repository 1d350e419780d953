"""What the report's plots and tables tell a reader: every bar's number, workers in natural order,
one colour-blind-safe palette for every picture, and the outcome_unknown calls with their keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from atmostonce import palette
from atmostonce.check.history import entries as h
from atmostonce.report.plots import records_chart, timeline_chart
from atmostonce.report.timeline import natural, timeline
from atmostonce.report.unknown_calls import unknown_calls
from atmostonce.spec.session import ToolCallStatus

pytest.importorskip("matplotlib")

PACKAGE = Path(__file__).resolve().parents[2] / "atmostonce"
HEX = re.compile(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b")


def _texts(svg: str) -> list[str]:
    return [t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def test_every_bar_segment_shows_its_count_and_each_bar_its_total() -> None:
    """A segment wide enough carries its count; a narrower one's count follows the bar's
    total, named by its record."""
    svg = records_chart({"read": {"succeeded": 1234, "failed": 300, "outcome_unknown": 2},
                         "non_idempotent_write": {"succeeded": 40, "rejected": 60},
                         "unclassified": {}})
    texts = _texts(svg)
    assert {"1,234", "300"} <= set(texts), texts
    assert "1,536 (outcome_unknown 2)" in texts
    assert "100 (succeeded 40, rejected 60)" in texts
    alone = _texts(records_chart({"read": {"succeeded": 40, "rejected": 60}}))
    assert {"40", "60", "100"} <= set(alone), alone


def test_the_count_check_catches_bars_without_numbers() -> None:
    """The bars alone carry no number: the texts the test above finds are the labels'."""
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots()
    ax.barh(["read"], [1234])
    from atmostonce.report.plots import _svg

    assert "1,234" not in _texts(_svg(figure))


def test_workers_are_laid_out_in_natural_order() -> None:
    entries: list[h.Entry] = []
    for run, worker in enumerate(("w10", "w2", "w1", "w11")):
        entries.append(h.RunStarted(float(run), run, worker, f"a{run}", f"s/t/c{run}", "tool",
                                    f"c{run}"))
        entries.append(h.RunEnded(run + 0.5, run, h.RunEnd.RETURNED))
    lanes, _, _ = timeline(entries)
    assert lanes == ["worker w1", "worker w2", "worker w10", "worker w11"]
    assert sorted(["w10", "w9", "w1"], key=natural) == ["w1", "w9", "w10"]


def test_no_colour_is_written_outside_the_palette() -> None:
    """Every module and template takes its colours from `atmostonce.palette`."""
    written = {str(path.relative_to(PACKAGE)): HEX.findall(path.read_text())
               for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.j2")]
               if path.name != "palette.py"}
    assert {path: found for path, found in written.items() if found} == {}
    assert HEX.findall('colour = "#c23b22"; css: #ccc;') == ["#c23b22", "#ccc"]


def test_a_kind_of_thing_has_one_colour_and_kinds_beside_each_other_differ() -> None:
    assert len(set(palette.RECORDS.values())) == len(palette.RECORDS)
    assert len(set(palette.RUNS.values())) == len(palette.RUNS)
    assert len(set(palette.FAULTS.values())) == len(palette.FAULTS)
    okabe_ito = {palette.BLACK, palette.ORANGE, palette.SKY_BLUE, palette.BLUISH_GREEN,
                 palette.YELLOW, palette.BLUE, palette.VERMILLION, palette.REDDISH_PURPLE}
    neutral = {palette.LIGHT_GREY, palette.GREY}
    for colours in (palette.RECORDS, palette.RUNS, palette.FAULTS, palette.VERDICTS):
        assert set(colours.values()) <= okabe_ito | neutral
    assert palette.RECORDS["outcome_unknown"] == palette.VERDICTS["fail"] == palette.NEVER


def test_the_timeline_draws_runs_hatched_and_every_outcome_in_its_colour() -> None:
    entries: list[h.Entry] = [
        h.CallAsked(0.0, "s1/t1/c1", "s1", "t1", "c1", "pay", "{}"),
        h.RunStarted(0.1, 1, "w1", "a1", "s1/t1/c1", "pay", "c1"),
        h.WorkerCrashed(0.2, "w1"),
        h.RecordPublished(1.0, "s1/t1/c1", ToolCallStatus.OUTCOME_UNKNOWN, "worker lost"),
    ]
    lanes, bars, bands = timeline(entries)
    svg = timeline_chart(lanes, bars, bands, "t")
    assert palette.RECORDS["outcome_unknown"].lower() in svg.lower()
    assert "hatch" in svg.lower() or "<pattern" in svg
    assert palette.FAULTS["crash"].lower() in svg.lower()


def test_outcome_unknown_calls_are_listed_with_their_keys() -> None:
    entries: list[h.Entry] = [
        h.CallAsked(10.0, "s1/t1/c1", "s1", "t1", "c1", "pay", "{}"),
        h.CallAsked(10.5, "s1/t1/c2", "s1", "t1", "c2", "read_doc", "{}"),
        h.HandedOut(11.0, "w1", "a1", "s1/t1/c1", "pay", True, "c1"),
        h.RunStarted(11.1, 1, "w1", "a1", "s1/t1/c1", "pay", "c1"),
        h.RecordPublished(12.0, "s1/t1/c2", ToolCallStatus.SUCCEEDED, ""),
        h.RecordPublished(13.25, "s1/t1/c1", ToolCallStatus.OUTCOME_UNKNOWN, "worker lost"),
    ]
    table = unknown_calls(entries)
    assert table is not None
    assert table.title == "Calls recorded outcome_unknown (1)"
    assert table.rows == (("s1/t1/c1", "pay", "s1", "0.00", "3.25", "1", "1", "worker lost"),)
    assert len(table.header) == len(table.rows[0])
    assert unknown_calls(entries[:-1]) is None
    assert unknown_calls([]) is None
