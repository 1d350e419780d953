"""The report page: what a command found, laid out by Jinja2 into one self-contained HTML file
(inline CSS and SVG, nothing fetched from the network), readable offline."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from atmostonce import palette
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
class Table:
    """A titled table of text cells, with a caption saying what a row is."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class Section:
    """One layer: its checks, its tables, its plots, its transition counts (None with
    `not_measured` saying why) and its counterexamples as sequence charts."""

    layer: str
    checks: tuple[Check, ...] = ()
    plots: tuple[Chart, ...] = ()
    counts: LayerCounts | None = None
    not_measured: str = ""
    counterexamples: tuple[Chart, ...] = ()
    tables: tuple[Table, ...] = ()


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
    """One machine a layer measured, drawn coloured by its counts."""

    machine: str
    svg: str
    rows: tuple[tuple[str, str, str, int], ...]
    never: int


@dataclass(frozen=True)
class Unmeasured:
    """The machines a layer did not measure for one reason: said once, not once a machine."""

    machines: tuple[str, ...]
    why: str


def _diagrams(counts: LayerCounts) -> list[Diagram]:
    from atmostonce.model.diagrams import machine_dot, svg_of

    drawn: list[Diagram] = []
    for m in counts.machines:
        if m.taken is None:
            continue
        svg = svg_of(machine_dot(MACHINES[m.machine], m.taken))
        rows = tuple((s, t, d, n) for (s, t, d), n in m.taken.items())
        drawn.append(Diagram(m.machine, svg[svg.index("<svg"):], rows, len(m.never)))
    return drawn


def _unmeasured(counts: LayerCounts) -> list[Unmeasured]:
    by_why: dict[str, list[str]] = {}
    for m in counts.machines:
        if m.taken is None:
            by_why.setdefault(m.why, []).append(m.machine)
    return [Unmeasured(tuple(names), why) for why, names in by_why.items()]


def listed(names: tuple[str, ...]) -> str:
    """`A`, `A and B`, `A, B and C`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def render(page: Page) -> str:
    """The page as HTML text."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("atmostonce.report", "."),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["listed"] = listed
    measured = [s for s in page.sections if s.counts is not None]
    diagrams = {s.layer: _diagrams(s.counts) for s in measured if s.counts is not None}
    unmeasured = {s.layer: _unmeasured(s.counts) for s in measured if s.counts is not None}
    return env.get_template(TEMPLATE).render(page=page, diagrams=diagrams,
                                             unmeasured=unmeasured, palette=palette)


def write(page: Page, path: Path) -> None:
    """Render and write the page; SpecError, one line, when the file cannot be written."""
    html = render(page)
    try:
        path.write_text(html, encoding="utf-8")
    except OSError as error:
        raise SpecError(f"--report {path}: cannot write it: {error.strerror}") from None
