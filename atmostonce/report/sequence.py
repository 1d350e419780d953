"""Message sequence charts: one lifeline per lane (agent, people, executor, workers, ledger),
an arrow per message in order, and a note on the lifeline for a local event such as a crash.

Drawn with matplotlib (the optional `report` extra) as SVG text, with fixed hash salt and no
date, so the same chart gives the same SVG.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from atmostonce import palette
from atmostonce.spec.errors import SpecError

_WRAP = 34


@dataclass(frozen=True)
class Message:
    """One message from `sender` to `receiver` (the same lane: a note on that lane's
    lifeline), with the step or time it happened at when known."""

    sender: str
    receiver: str
    text: str
    time: float | None = None

    @property
    def local(self) -> bool:
        return self.sender == self.receiver


def _check(lanes: Sequence[str], messages: Sequence[Message]) -> dict[str, int]:
    if not lanes:
        raise SpecError("a sequence chart needs at least one lane")
    column = {lane: i for i, lane in enumerate(lanes)}
    if len(column) != len(lanes):
        raise SpecError(f"a sequence chart names a lane twice: {', '.join(lanes)}")
    for m in messages:
        for lane in (m.sender, m.receiver):
            if lane not in column:
                raise SpecError(f"message {m.text!r} names lane {lane!r}, which the chart "
                                f"does not have (lanes: {', '.join(lanes)})")
    return column


def _figure(rows: int, lanes: int) -> tuple[Any, Any]:
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - the extra is installed where charts are tested
        raise SpecError("drawing sequence charts needs matplotlib: pip install "
                        "'atmostonce[report]'") from None
    figure = Figure(figsize=(1.0 + 2.3 * lanes, 1.4 + 0.5 * max(rows, 1)))
    axes = figure.add_axes((0.04, 0.02, 0.94, 0.9))
    return figure, axes


def sequence_svg(lanes: Sequence[str], messages: Sequence[Message], title: str) -> str:
    """The chart of `messages` between `lanes` (left to right, in the order given) as SVG
    text; SpecError, one line, for a message naming a lane the chart does not have."""
    return sequence_image(lanes, messages, title, "svg")


def sequence_image(lanes: Sequence[str], messages: Sequence[Message], title: str,
                   kind: str) -> str:
    """The chart in matplotlib's format `kind` (`svg`, or `png` as latin-1 text for a look)."""
    column = _check(lanes, messages)
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "atmostonce", "svg.fonttype": "none",
                                "font.size": 8}):
        figure, ax = _figure(len(messages), len(lanes))
        rows = len(messages)
        ax.set_xlim(-0.75, len(lanes) - 0.35)
        ax.set_ylim(rows + 0.2, -1.3)
        ax.axis("off")
        ax.set_title(title, fontsize=10, loc="left")
        for lane, x in column.items():
            ax.vlines(x, -0.7, rows - 0.3, colors=palette.GREY, linestyles="dashed", linewidth=0.8)
            ax.text(x, -0.9, lane, ha="center", va="center", fontsize=9, fontweight="bold",
                    bbox={"boxstyle": "round,pad=0.4", "fc": palette.LANE, "ec": palette.LANE_EDGE})
        for y, m in enumerate(messages):
            text = textwrap.fill(m.text, _WRAP)
            if m.time is not None:
                ax.text(-0.7, y, f"{m.time:g}", ha="left", va="center", color=palette.MUTED)
            xs, xr = column[m.sender], column[m.receiver]
            if m.local:
                ax.plot([xs], [y], marker="o", color=palette.ARROW, markersize=4)
                ax.text(xs + 0.06, y, text, ha="left", va="center",
                        bbox={"boxstyle": "round,pad=0.3", "fc": palette.NOTE,
                              "ec": palette.NOTE_EDGE})
            else:
                ax.annotate("", xy=(xr, y), xytext=(xs, y),
                            arrowprops={"arrowstyle": "-|>", "color": palette.ARROW, "lw": 1.1})
                ax.text((xs + xr) / 2, y - 0.08, text, ha="center", va="bottom")
        out = io.BytesIO()
        figure.savefig(out, format=kind, metadata={"Date": None} if kind == "svg" else None)
    return out.getvalue().decode("utf-8" if kind == "svg" else "latin-1")
