"""The report's plots, drawn with matplotlib and returned as inline SVG text: records per effect
class, time-to-record distributions, and a Jepsen-style timeline of calls and faults."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RECORD_COLOURS = {
    "succeeded": "#4c9a2a",
    "failed": "#d9822b",
    "rejected": "#7f7f7f",
    "outcome_unknown": "#c23b22",
    "none": "#c9c9c9",
    "run returned": "#8fc46f",
    "run tool_failed": "#f0b27a",
    "run killed": "#e57373",
    "run stopped": "#b39ddb",
    "run going": "#e0e0e0",
}
LOG_FROM = 50
"""A histogram of more values than this has log-scaled counts, so rare slow records show."""
FAULT_COLOURS = {"crash": "#c23b22", "cut": "#3b6fc2", "restart": "#8e44ad", "pause": "#d4ac0d",
                 "disk": "#6e4b1f"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "atmostonce",
                                "font.size": 9})
    import matplotlib.pyplot as plt

    return plt


def _svg(figure: Any) -> str:
    """The figure as an SVG element (no XML prolog), closed afterwards."""
    plt = _pyplot()
    out = io.StringIO()
    figure.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = out.getvalue()
    return text[text.index("<svg"):]


def records_chart(records: Mapping[str, Mapping[str, int]]) -> str:
    """Stacked bars: per effect class, how many calls ended with each record."""
    plt = _pyplot()
    effects = [e for e, row in records.items() if sum(row.values())]
    figure, ax = plt.subplots(figsize=(7.5, 0.5 + 0.45 * max(1, len(effects))))
    left = [0] * len(effects)
    for record, colour in RECORD_COLOURS.items():
        values = [records[e].get(record, 0) for e in effects]
        if not any(values):
            continue
        ax.barh(effects, values, left=left, color=colour, label=record)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("calls")
    ax.legend(loc="lower right", fontsize=7, frameon=False, ncols=5,
              bbox_to_anchor=(1.0, 1.06))
    return _svg(figure)


def times_chart(times: Mapping[str, Sequence[float]], unit: str = "s") -> str:
    """Per effect class, the distribution of the time from ask to record (a histogram each)."""
    plt = _pyplot()
    shown = {e: v for e, v in times.items() if v}
    figure, axes = plt.subplots(len(shown) or 1, 1, figsize=(7.5, 0.4 + 1.3 * max(1, len(shown))),
                                sharex=True, squeeze=False)
    for ax, (effect, values) in zip(axes[:, 0], sorted(shown.items()), strict=False):
        ax.hist(values, bins=40, color="#3b6fc2")
        ax.set_ylabel(effect, rotation=0, ha="right", va="center")
        if len(values) > LOG_FROM:
            ax.set_yscale("log")
    axes[-1, 0].set_xlabel(f"time ({unit})")
    return _svg(figure)


@dataclass(frozen=True)
class Bar:
    """One operation on the timeline: its lane (a process), when it ran, and how it ended."""

    lane: str
    start: float
    end: float
    outcome: str


@dataclass(frozen=True)
class Band:
    """A fault over time: on one lane, or across every lane when `lane` is None."""

    start: float
    end: float
    kind: str
    lane: str | None = None


def timeline_chart(lanes: Sequence[str], bars: Sequence[Bar], bands: Sequence[Band],
                   title: str) -> str:
    """Jepsen's picture: a row per process, each operation a bar coloured by its outcome, faults
    as shaded bands (on a lane, or over all of them)."""
    plt = _pyplot()
    row = {lane: i for i, lane in enumerate(lanes)}
    figure, ax = plt.subplots(figsize=(10, 0.8 + 0.28 * max(1, len(lanes))))
    seen: set[str] = set()
    for band in bands:
        colour = FAULT_COLOURS.get(band.kind, "#999999")
        label = None if band.kind in seen else band.kind
        seen.add(band.kind)
        width = max(band.end - band.start, 0.05)
        if band.lane is None:
            ax.axvspan(band.start, band.start + width, color=colour, alpha=0.18, label=label)
        elif band.lane in row:
            y = row[band.lane]
            ax.fill_between([band.start, band.start + width], y - 0.5, y + 0.5, color=colour,
                            alpha=0.25, label=label, linewidth=0)
    by_outcome: dict[str, list[Bar]] = {}
    for bar in bars:
        by_outcome.setdefault(bar.outcome, []).append(bar)
    for outcome, group in by_outcome.items():
        colour = RECORD_COLOURS.get(outcome, "#555555")
        for lane in {b.lane for b in group}:
            spans = [(b.start, max(b.end - b.start, 0.01)) for b in group if b.lane == lane]
            ax.broken_barh(spans, (row[lane] - 0.35, 0.7), color=colour)
        ax.plot([], [], color=colour, linewidth=6, label=outcome)
    ax.set_yticks(range(len(lanes)), list(lanes), fontsize=7)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlabel("seconds")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=7, frameon=False, ncols=8,
              bbox_to_anchor=(1.0, 1.02))
    return _svg(figure)
