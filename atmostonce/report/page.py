"""The report page: what a command found, laid out by Jinja2 into one self-contained HTML file
(inline CSS and SVG, nothing fetched from the network), readable offline."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from atmostonce.report.counts import MACHINES, LayerCounts
from atmostonce.spec.errors import SpecError

TEMPLATE = "page.html.j2"


@dataclass(frozen=True)
class Check:
    """One check of a layer: whether it held (None: not checkable), its summary, its details."""

    name: str
    ok: bool | None
    summary: str
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chart:
    """A titled picture as inline SVG, with a caption saying what it shows."""

    title: str
    svg: str
    caption: str = ""


@dataclass(frozen=True)
class Section:
    """One layer: its checks, its plots, its transition counts (None with `not_measured` saying
    why) and its counterexamples as sequence charts."""

    layer: str
    checks: tuple[Check, ...] = ()
    plots: tuple[Chart, ...] = ()
    counts: LayerCounts | None = None
    not_measured: str = ""
    counterexamples: tuple[Chart, ...] = ()


@dataclass(frozen=True)
class Page:
    title: str
    command: str
    subject: str
    ok: bool
    sections: tuple[Section, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Diagram:
    """One machine in one layer, drawn coloured by its counts, or why it is not."""

    machine: str
    svg: str
    why: str
    rows: tuple[tuple[str, str, str, int], ...]
    never: int


def _diagrams(counts: LayerCounts) -> list[Diagram]:
    from atmostonce.model.diagrams import machine_dot, svg_of

    drawn: list[Diagram] = []
    for m in counts.machines:
        if m.taken is None:
            drawn.append(Diagram(m.machine, "", m.why, (), 0))
            continue
        svg = svg_of(machine_dot(MACHINES[m.machine], m.taken))
        rows = tuple((s, t, d, n) for (s, t, d), n in m.taken.items())
        drawn.append(Diagram(m.machine, svg[svg.index("<svg"):], "", rows, len(m.never)))
    return drawn


def render(page: Page) -> str:
    """The page as HTML text."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("atmostonce.report", "."),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    diagrams = {s.layer: _diagrams(s.counts) for s in page.sections if s.counts is not None}
    return env.get_template(TEMPLATE).render(page=page, diagrams=diagrams)


def write(page: Page, path: Path) -> None:
    """Render and write the page; SpecError, one line, when the file cannot be written."""
    html = render(page)
    try:
        path.write_text(html, encoding="utf-8")
    except OSError as error:
        raise SpecError(f"--report {path}: cannot write it: {error.strerror}") from None
