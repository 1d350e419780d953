"""The report's plots, drawn with matplotlib and returned as inline SVG text: records per effect
class, time-to-record distributions, and a Jepsen-style timeline of calls and faults."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from atmostonce import palette

LOG_FROM = 50
"""A histogram of more values than this has log-scaled counts, so rare slow records show."""
RUN_HATCH = "////"
"""Tool runs on a worker's lane are hatched, so they never pass for a session's calls."""
FITS = 0.06
"""A bar segment narrower than this share of the axis gets its number after the bar instead."""
NUMBER_ID = "bar-number"
"""The SVG id prefix of a bar's number, by which a reader of the SVG (a test) finds them."""


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


def _ink(colour: str) -> str:
    """Black or white, whichever reads better on `colour` (by its luminance)."""
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return palette.BLACK if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "white"


def records_chart(records: Mapping[str, Mapping[str, int]]) -> str:
    """Stacked bars: per effect class, how many calls ended with each record, each segment's
    count written on it (or, where it is too narrow, after the bar with the total)."""
    plt = _pyplot()
    effects = [e for e, row in records.items() if sum(row.values())]
    figure, ax = plt.subplots(figsize=(7.5, 0.5 + 0.45 * max(1, len(effects))))
    totals = [sum(records[e].values()) for e in effects]
    widest = max(totals, default=1)
    left = [0] * len(effects)
    after: list[list[str]] = [[] for _ in effects]
    numbers: list[Any] = []
    for record, colour in palette.RECORDS.items():
        values = [records[e].get(record, 0) for e in effects]
        if not any(values):
            continue
        bars = ax.barh(effects, values, left=left, color=colour, label=record)
        inside = [f"{v:,}" if v and v >= FITS * widest * len(f"{v:,}") / 3 else ""
                  for v in values]
        numbers += ax.bar_label(bars, labels=inside, label_type="center", fontsize=8,
                                color=_ink(colour))
        for i, (v, shown) in enumerate(zip(values, inside, strict=True)):
            if v and not shown:
                after[i].append(f"{record} {v:,}")
        left = [a + b for a, b in zip(left, values, strict=True)]
    for y, (total, hidden) in enumerate(zip(totals, after, strict=True)):
        numbers.append(ax.text(total + widest * 0.01, y, f"{total:,}" + (
            f" ({', '.join(hidden)})" if hidden else ""), va="center", fontsize=8))
    for n, text in enumerate(t for t in numbers if t.get_text()):
        text.set_gid(f"{NUMBER_ID}-{n}")
    ax.set_xlim(0, widest * 1.25)
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
        ax.hist(values, bins=40, color=palette.BLUE)
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
    """Jepsen's picture: a row per process, each operation a bar coloured by its outcome (a
    tool run's hatched), faults as shaded bands (on a lane, or over all of them); `title`
    names the time axis (the key sits above the picture)."""
    from matplotlib.patches import Patch

    plt = _pyplot()
    row = {lane: i for i, lane in enumerate(lanes)}
    figure, ax = plt.subplots(figsize=(10, 0.8 + 0.28 * max(1, len(lanes))))
    keys: dict[str, Patch] = {}
    for band in bands:
        colour = palette.FAULTS.get(band.kind, palette.GREY)
        keys.setdefault(band.kind, Patch(facecolor=colour, alpha=0.25, label=band.kind))
        width = max(band.end - band.start, 0.05)
        if band.lane is None:
            ax.axvspan(band.start, band.start + width, color=colour, alpha=0.18)
        elif band.lane in row:
            y = row[band.lane]
            ax.fill_between([band.start, band.start + width], y - 0.5, y + 0.5, color=colour,
                            alpha=0.25, linewidth=0)
    by_outcome: dict[str, list[Bar]] = {}
    for bar in bars:
        by_outcome.setdefault(bar.outcome, []).append(bar)
    for outcome, group in by_outcome.items():
        colour = {**palette.RECORDS, **palette.RUNS}.get(outcome, palette.GREY)
        hatch = RUN_HATCH if outcome in palette.RUNS else None
        for lane in sorted({b.lane for b in group}, key=row.__getitem__):
            spans = [(b.start, max(b.end - b.start, 0.01)) for b in group if b.lane == lane]
            ax.broken_barh(spans, (row[lane] - 0.35, 0.7), facecolors=colour, hatch=hatch,
                           edgecolor="white" if hatch else colour, linewidth=0)
        keys[outcome] = Patch(facecolor=colour, hatch=hatch, edgecolor="white", label=outcome)
    ax.set_yticks(range(len(lanes)), list(lanes), fontsize=7)
    ax.set_ylim(len(lanes) - 0.5, -0.5)
    ax.set_xlabel(title)
    ax.legend(handles=list(keys.values()), loc="lower right", fontsize=7, frameon=False,
              ncols=8, bbox_to_anchor=(1.0, 1.02))
    return _svg(figure)
