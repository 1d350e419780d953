"""State diagrams drawn from the very `transitions` definitions the checks run on.

Each machine is drawn by `transitions`' GraphMachine, with its guards on the edges, its initial
state filled, its terminal states double-bordered and a legend; given how often each transition
was taken, edges are coloured and thickened by frequency and never-taken ones drawn dashed red.
The DOT text is deterministic, so the committed `diagrams/*.dot` can be compared with a fresh
rendering; SVG is written beside it when Graphviz's `dot` is installed.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transitions.extensions import GraphMachine
from transitions.extensions.diagrams_graphviz import Graph

from atmostonce import palette
from atmostonce.model.drawing import FONT, PAGE, legend_label, wrapped
from atmostonce.model.guards import GUARDS
from atmostonce.model.machines import ALL_MACHINES, MachineDef
from atmostonce.model.overview import overview_dot
from atmostonce.spec.errors import SpecError

Transition = tuple[str, str, str]
"""(source state, trigger, destination state)."""

TIMES = "\N{MULTIPLICATION SIGN}"
NEVER_TAKEN = {"color": palette.NEVER, "fontcolor": palette.NEVER, "style": "dashed"}
_INITIAL = {"fillcolor": palette.INITIAL}
_TERMINAL = {"peripheries": "2", "fillcolor": palette.TERMINAL}


def edges(machine: MachineDef) -> list[Transition]:
    """Every (source, trigger, destination) the machine has, in definition order."""
    return [(source, e.trigger, e.dest) for e in machine.edges for source in e.sources]


def _style(count: int, most: int) -> dict[str, str]:
    if count == 0:
        return dict(NEVER_TAKEN)
    shades = palette.SHADES
    level = 0 if most <= 1 else round(math.log(count) / math.log(most) * (len(shades) - 1))
    return {"color": shades[level], "penwidth": f"{1 + level * 0.8:.1f}"}


class _Holder:
    """The object a GraphMachine binds its state and graph to."""


class _Graph(Graph):
    """transitions' Graphviz graph, drawing one edge per trigger (so each can carry its own
    count) and marking initial and terminal states."""

    machine: _DiagramMachine

    def _add_nodes(self, states: list[dict[str, Any]], container: Any) -> None:
        definition = self.machine.definition
        for state in states:
            name = state["name"]
            attrs = dict(_INITIAL) if name == definition.initial else {}
            if name in definition.terminal:
                attrs.update(_TERMINAL)
            container.node(name, label=self._convert_state_attributes(state), **attrs)

    def _add_edges(self, transitions: list[dict[str, Any]], container: Any) -> None:
        taken = self.machine.taken
        most = max(taken.values(), default=0) if taken is not None else 0
        for t in transitions:
            trigger, _, guard = self._transition_label(t).partition(" [")
            label = trigger + (f"\\n{wrapped('[' + guard)}" if guard else "")
            attrs: dict[str, str] = {}
            if taken is not None:
                count = taken.get((t["source"], t["trigger"], t["dest"]), 0)
                label = f"{label}\\n{TIMES}{count:,}"
                attrs = _style(count, most)
            container.edge(t["source"], t["dest"], label=label, **attrs)


class _DiagramMachine(GraphMachine):
    """A GraphMachine that draws with `_Graph` and knows its definition and the counts."""

    def __init__(self, definition: MachineDef, taken: Mapping[Transition, int] | None) -> None:
        self.definition = definition
        self.taken = taken
        super().__init__(
            model=_Holder(),
            states=list(definition.states),
            transitions=definition.transitions(guarded=True),
            initial=definition.initial,
            auto_transitions=False,
            graph_engine="graphviz",
            title=definition.name,
            show_conditions=True,
            show_state_attributes=False,
        )

    def _init_graphviz_engine(self, _graph_engine: str) -> type[Graph]:
        return _Graph


def _legend(machine: MachineDef, counted: bool) -> list[tuple[str, str]]:
    """What the diagram's marks mean, as (mark, meaning) rows."""
    rows = [
        ("filled yellow", "initial state"),
        ("double border", "terminal state: no edge leaves it"),
        ("trigger [a & !b]", "taken when guard a holds, b does not"),
    ]
    if counted:
        rows += [(f"{TIMES}N, darker, thicker", "taken N times: darker is more often"),
                 (f"dashed red {TIMES}0", "never taken")]
    used = dict.fromkeys(n for e in machine.edges for n in (*e.conditions, *e.unless))
    return rows + [(name, GUARDS[name].text) for name in used]


def machine_dot(machine: MachineDef, taken: Mapping[Transition, int] | None = None) -> str:
    """The DOT of one machine, with guards, marked states and a legend; with `taken`, which maps
    (source, trigger, destination) to how often it was taken, edges are coloured and labelled
    by their counts and never-taken edges dashed red. SpecError for a transition the machine
    does not have or a negative count."""
    if taken is not None:
        known = set(edges(machine))
        for key, count in taken.items():
            if key not in known:
                raise SpecError(f"{machine.name} has no transition {key[1]} from {key[0]} "
                                f"to {key[2]}")
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise SpecError(f"{machine.name}.{key[1]} from {key[0]}: count must be a "
                                f"whole number of at least 0, got {count!r}")
    holder = _DiagramMachine(machine, taken).models[0]
    graph: Any = holder.get_graph()
    title = machine.name
    if machine.effects:
        title += f": calls of {', '.join(e.value for e in machine.effects)}"
    graph.graph_attr.update(PAGE)
    graph.node_attr.update(FONT)
    graph.edge_attr.update(FONT)
    graph.graph_attr["label"] = legend_label(title, _legend(machine, taken is not None))
    return str(graph.source)


def dot_source(machine: MachineDef) -> str:
    """The DOT text of one machine as `atmostonce diagrams` writes it."""
    return machine_dot(machine)


def svg_of(dot: str) -> str:
    """SVG text of DOT text, drawn by Graphviz's `dot`; SpecError when it is missing or fails."""
    program = shutil.which("dot")
    if program is None:
        raise SpecError("Graphviz's `dot` is not installed (Debian: apt-get install graphviz)")
    done = subprocess.run([program, "-Tsvg"], input=dot, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        problem = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise SpecError(f"Graphviz's dot could not draw the diagram: {problem}")
    return done.stdout


@dataclass(frozen=True)
class Written:
    dot: Path
    svg: Path | None


def all_sources() -> dict[str, str]:
    """File stem -> DOT text of every diagram `atmostonce diagrams` writes: each machine's,
    and the overview of how they interact."""
    return {**{m.name: dot_source(m) for m in ALL_MACHINES}, "overview": overview_dot()}


def write(out: Path) -> tuple[list[Written], str]:
    """Write every machine's DOT and the overview's (and SVG when `dot` exists) into `out`,
    created when missing; returns what was written and a note for the user (empty when SVG
    was drawn). SpecError, one line, when `out` cannot be written into."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SpecError(f"cannot write the diagrams into {out}: {error.strerror}") from None
    drawing = shutil.which("dot") is not None
    written: list[Written] = []
    for stem, source in all_sources().items():
        dot_path = out / f"{stem}.dot"
        svg_path = out / f"{stem}.svg" if drawing else None
        try:
            dot_path.write_text(source)
            if svg_path is not None:
                svg_path.write_text(svg_of(source))
        except OSError as error:
            raise SpecError(f"cannot write {error.filename}: {error.strerror}") from None
        written.append(Written(dot_path, svg_path))
    note = "" if drawing else (
        "Graphviz's `dot` is not installed, so only DOT was written; install it "
        "(Debian: apt-get install graphviz) to get SVG as well")
    return written, note


def by_machine(taken: Mapping[tuple[str, str, str], int]) -> dict[str, dict[Transition, int]]:
    """Counts keyed as the model's coverage keys them, (machine, source, trigger), regrouped
    per machine as `machine_dot` takes them (the destination follows from source and trigger).
    SpecError for a transition no machine has."""
    dests = {(m.name, s, t): d for m in ALL_MACHINES for s, t, d in edges(m)}
    out: dict[str, dict[Transition, int]] = defaultdict(dict)
    for (name, source, trigger), count in taken.items():
        dest = dests.get((name, source, trigger))
        if dest is None:
            raise SpecError(f"{name} has no transition {trigger} from {source}")
        out[name][(source, trigger, dest)] = count
    return dict(out)
