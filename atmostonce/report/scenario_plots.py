"""The plots of a scenario report beyond the ones every simulation draws: failed records split
by the reason their error gives, per tool; and, after a sweep, each record's share with its 95%
interval against the swept value, and a per-tool figure (such as the median time to record)
against it. Each returns inline SVG text, drawn with matplotlib like `atmostonce.report.plots`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from atmostonce import palette
from atmostonce.report.plots import _pyplot, _svg

RECORD_COLOURS = {k: v for k, v in palette.RECORDS.items() if k != "none"}
"""A record's colour in the sweep's panels."""
REASON_COLOURS = {
    "did_not_run": palette.SKY_BLUE,
    "tool_error": palette.ORANGE,
    "may_have_run": palette.REDDISH_PURPLE,
    "may_still_be_running": palette.VERMILLION,
    "unnamed": palette.GREY,
}
"""A failed record's reason, by the `FailureKind` its error names (unnamed: none)."""
TOOL_COLOURS = (palette.BLUE, palette.ORANGE, palette.BLUISH_GREEN, palette.VERMILLION,
                palette.REDDISH_PURPLE, palette.SKY_BLUE, palette.GREY, palette.BLACK)
"""One line per tool, in turn."""

Share = tuple[float, float, float]
"""A share with its 95% interval: (share, low, high)."""


def reasons_chart(reasons: Mapping[str, Mapping[str, int]]) -> str:
    """Stacked bars: per tool (in the mapping's order), its failed records by reason."""
    plt = _pyplot()
    tools = [t for t, row in reasons.items() if sum(row.values())]
    figure, ax = plt.subplots(figsize=(7.5, 0.5 + 0.45 * max(1, len(tools))))
    left = [0] * len(tools)
    for reason, colour in REASON_COLOURS.items():
        values = [reasons[t].get(reason, 0) for t in tools]
        if not any(values):
            continue
        ax.barh(tools, values, left=left, color=colour, label=reason)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("failed calls")
    ax.legend(loc="lower right", fontsize=7, frameon=False, ncols=5,
              bbox_to_anchor=(1.0, 1.06))
    return _svg(figure)


def shares_chart(setting: str, values: Sequence[str], shares: Mapping[str, Sequence[Share]]
                 ) -> str:
    """A panel per record: its share of the calls at each value of `setting`, the 95% interval
    as error bars; each panel has its own scale, so a rare record's change shows."""
    plt = _pyplot()
    shown = [r for r in RECORD_COLOURS if r in shares]
    figure, axes = plt.subplots(len(shown), 1, figsize=(7.5, 0.6 + 1.4 * len(shown)),
                                sharex=True, squeeze=False)
    at = range(len(values))
    for ax, record in zip(axes[:, 0], shown, strict=True):
        row = shares[record]
        middle = [100 * s for s, _, _ in row]
        below = [100 * (s - low) for s, low, _ in row]
        above = [100 * (high - s) for s, _, high in row]
        ax.errorbar(at, middle, yerr=[below, above], color=RECORD_COLOURS[record], marker="o",
                    capsize=3)
        ax.set_ylabel(f"{record}\n% of calls", rotation=0, ha="right", va="center")
    bottom = axes[-1, 0]
    bottom.set_xticks(list(at), list(values))
    bottom.set_xlabel(setting)
    return _svg(figure)


def per_tool_chart(setting: str, values: Sequence[str],
                   figures: Mapping[str, Sequence[float | None]], label: str) -> str:
    """A line per tool: its figure (None where it had none) at each value of `setting`; a
    tool's colour is its place in `figures`, so pass every tool for the same colours across
    charts."""
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(7.5, 3.2))
    at = range(len(values))
    for i, (tool, row) in enumerate(figures.items()):
        points = [(x, y) for x, y in zip(at, row, strict=True) if y is not None]
        if points:
            ax.plot([x for x, _ in points], [y for _, y in points], marker="o", label=tool,
                    color=TOOL_COLOURS[i % len(TOOL_COLOURS)])
    ax.set_xticks(list(at), list(values))
    ax.set_xlabel(setting)
    ax.set_ylabel(label)
    ax.legend(loc="upper left", fontsize=7, frameon=False, bbox_to_anchor=(1.0, 1.0))
    return _svg(figure)
