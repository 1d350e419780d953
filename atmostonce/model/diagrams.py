"""State diagrams drawn from the very `transitions` definitions the checks run on.

The DOT text is deterministic, so the committed `diagrams/*.dot` can be compared with a fresh
rendering; SVG is written beside it when Graphviz's `dot` is installed.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from transitions.extensions import GraphMachine

from atmostonce.model.machines import ALL_MACHINES, MachineDef
from atmostonce.spec.errors import SpecError


class _Holder:
    """The object a GraphMachine binds its state and graph to."""


def dot_source(machine: MachineDef) -> str:
    """The DOT text of one machine, drawn by `transitions`' own diagram extension."""
    holder = _Holder()
    GraphMachine(
        model=holder,
        states=list(machine.states),
        transitions=machine.transitions(),
        initial=machine.initial,
        auto_transitions=False,
        graph_engine="graphviz",
        title=machine.name,
        show_conditions=False,
        show_state_attributes=False,
    )
    graph = holder.get_graph()  # type: ignore[attr-defined]
    return str(graph.source)


@dataclass(frozen=True)
class Written:
    dot: Path
    svg: Path | None


def write(out: Path) -> tuple[list[Written], str]:
    """Write every machine's DOT (and SVG when `dot` exists) into `out`, created when missing;
    returns what was written and a note for the user (empty when SVG was drawn). SpecError,
    one line, when `out` cannot be written into."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SpecError(f"cannot write the diagrams into {out}: {error.strerror}") from None
    dot = shutil.which("dot")
    written: list[Written] = []
    for machine in ALL_MACHINES:
        source = dot_source(machine)
        dot_path = out / f"{machine.name}.dot"
        try:
            dot_path.write_text(source)
        except OSError as error:
            raise SpecError(f"cannot write {dot_path}: {error.strerror}") from None
        svg_path: Path | None = None
        if dot is not None:
            svg_path = out / f"{machine.name}.svg"
            subprocess.run([dot, "-Tsvg", "-o", str(svg_path), str(dot_path)], check=True)
        written.append(Written(dot_path, svg_path))
    note = "" if dot is not None else (
        "Graphviz's `dot` is not installed, so only DOT was written; install it "
        "(Debian: apt-get install graphviz) to get SVG as well")
    return written, note
