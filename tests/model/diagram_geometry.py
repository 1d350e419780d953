"""Where Graphviz put a diagram's texts and lines: its own layout (`dot -Tjson`, the xdot drawing
operations with each text's width), read into boxes a test can compare."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

Box = tuple[float, float, float, float]
"""(left, bottom, right, top) in points, y upwards as Graphviz lays out."""


@dataclass(frozen=True)
class Text:
    """One line of text and the object (`node NAME`, `edge N`, `graph`) it labels."""

    owner: str
    text: str
    box: Box


@dataclass(frozen=True)
class Layout:
    width: float
    height: float
    texts: tuple[Text, ...]
    lines: tuple[tuple[str, tuple[tuple[float, float], ...]], ...]
    """Each edge's and node's outline as points along it."""


def _text_box(op: dict[str, Any], size: float) -> Box:
    x, y = op["pt"]
    width = float(op["width"])
    left = {"l": x, "c": x - width / 2, "r": x - width}[op["align"]]
    return (left, y - 0.2 * size, left + width, y + 0.75 * size)


def _bezier(points: list[list[float]], steps: int = 12) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for i in range(0, len(points) - 3, 3):
        p0, p1, p2, p3 = points[i: i + 4]
        for k in range(steps + 1):
            t = k / steps
            a, b, c, d = (1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t ** 3
            out.append((a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0],
                        a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1]))
    return out


def _texts(owner: str, ops: list[dict[str, Any]]) -> list[Text]:
    size = 14.0
    found: list[Text] = []
    for op in ops:
        if op["op"] == "F":
            size = float(op["size"])
        elif op["op"] == "T":
            found.append(Text(owner, op["text"], _text_box(op, size)))
    return found


def layout(dot: str) -> Layout:
    """The layout Graphviz's `dot` gives the DOT text."""
    program = shutil.which("dot")
    assert program is not None
    done = subprocess.run([program, "-Tjson"], input=dot, capture_output=True, text=True,
                          check=True)
    graph = json.loads(done.stdout)
    _, _, width, height = (float(v) for v in graph["bb"].split(","))
    texts = _texts("graph", graph.get("_ldraw_", []))
    lines: list[tuple[str, tuple[tuple[float, float], ...]]] = []
    for obj in graph.get("objects", []):
        owner = f"node {obj['name']}"
        for key in ("_ldraw_", "_xldraw_"):
            texts += _texts(owner, obj.get(key, []))
        for op in obj.get("_draw_", []):
            if op["op"] in ("p", "P", "b", "B"):
                lines.append((owner, tuple((x, y) for x, y in op["points"])))
    for edge in graph.get("edges", []):
        owner = f"edge {edge['_gvid']}"
        for key in ("_ldraw_", "_xldraw_", "_hldraw_", "_tldraw_"):
            texts += _texts(owner, edge.get(key, []))
        for op in edge.get("_draw_", []):
            if op["op"] == "b":
                lines.append((owner, tuple(_bezier(op["points"]))))
    return Layout(width, height, tuple(texts), tuple(lines))


def overlap(a: Box, b: Box, slack: float = 0.5) -> bool:
    """Whether two boxes share more than a sliver."""
    return (min(a[2], b[2]) - max(a[0], b[0]) > slack
            and min(a[3], b[3]) - max(a[1], b[1]) > slack)


def overlapping(found: Layout) -> list[tuple[Text, Text]]:
    """Every pair of texts of different objects whose boxes overlap."""
    texts = found.texts
    return [(a, b) for i, a in enumerate(texts) for b in texts[i + 1:]
            if a.owner != b.owner and overlap(a.box, b.box)]


def union(boxes: list[Box]) -> Box:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
            max(b[3] for b in boxes))


def crossed(found: Layout) -> list[tuple[Text, str]]:
    """Every label text another object's line runs through (inside its box, a point's slack
    in from each side), with that object."""
    out: list[tuple[Text, str]] = []
    for t in found.texts:
        if t.owner == "graph":
            continue
        left, bottom, right, top = t.box
        for owner, points in found.lines:
            if owner != t.owner and any(left + 1 < x < right - 1 and bottom + 1 < y < top - 1
                                        for x, y in points):
                out.append((t, owner))
                break
    return out
