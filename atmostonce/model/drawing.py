"""How the model's diagrams are laid out so that they fit a page and stay readable there.

Graphviz draws them top to bottom with edge labels wrapped to a few words a line, so a machine
grows downwards rather than into a strip several screens wide. The title and the legend are the
graph's own label, a table Graphviz sets above the drawing: no edge can run through it.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

LABEL_WIDTH = 22
"""Characters per line of an edge label."""
LEGEND_WIDTH = 36
"""Characters per line of a legend entry's explanation."""
FONT = {"fontname": "Helvetica", "fontsize": "14"}
PAGE = {"rankdir": "TB", "labelloc": "t", "nodesep": "0.35", "ranksep": "0.8",
        "splines": "polyline", **FONT}
"""Graph attributes every diagram shares (`FONT` also for its nodes and edges)."""


def wrapped(text: str, width: int = LABEL_WIDTH) -> str:
    """`text` as DOT's centred lines (`\\n` between them), broken between words."""
    return "\\n".join(textwrap.wrap(text, width, break_long_words=False,
                                       break_on_hyphens=False)) or text


def _lines(text: str) -> list[str]:
    return [html.escape(line) for line in
            textwrap.wrap(text, LEGEND_WIDTH, break_on_hyphens=False)]


def legend_label(title: str, rows: Sequence[tuple[str, str]]) -> str:
    """An HTML-like label: `title` in bold, then a row per (mark, meaning), the meaning wrapped;
    both are plain text and escaped here."""
    cells = "".join(
        f'<tr><td align="left" valign="top"><b>{html.escape(mark)}</b></td>'
        f'<td align="left" balign="left">{"<br/>".join(_lines(text))}</td></tr>'
        for mark, text in rows)
    heading = f'<tr><td colspan="2"><b>{html.escape(title)}</b></td></tr>'
    return f'<<table border="0" cellspacing="0" cellpadding="2">{heading}{cells}</table>>'
