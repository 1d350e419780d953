"""How the component machines interact, found by exploring the model rather than written down.

Every transition of a small but complete bound is compared before and after: the machine (or
the environment's actor) whose trigger the step is, and every other machine whose state the
step changes. An arrow A -> B labelled `t` says A's step `t` moved B. A step that leaves B's
state as it was draws no arrow: a cancel leaves the run going (TC-AMO-3), so `time_out` moves
the call but not the run.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cache

import graphviz

from atmostonce import palette
from atmostonce.model import layout as s
from atmostonce.model.config import ModelConfig
from atmostonce.model.drawing import FONT, PAGE, legend_label, wrapped
from atmostonce.model.layout import State
from atmostonce.model.machines import ALL_MACHINES, CALL_SINGLE_ATTEMPT_TOOL, CALL_TOOL
from atmostonce.model.system import System
from atmostonce.spec.errors import SpecError
from atmostonce.spec.step_kinds import StepKind

BOUND = ModelConfig(workers=1, calls=1, faults=1)
"""One worker, one call (asked again once), every fault kind once: each way the machines
interact happens within it, and it explores in a few seconds."""

# Steps that are no machine's trigger: who in the environment takes them.
ACTORS = {
    StepKind.ASK: "agent's model", StepKind.REASK: "agent's model",
    StepKind.CHANGE_POLICY: "developer", StepKind.RESTART: "server restart",
    StepKind.RECONCILE: "reconcile job", StepKind.RECONCILE_CRASH: "reconcile job",
}


@dataclass(frozen=True)
class Interaction:
    """`origin`'s steps `kinds` (sorted) change `target`'s state."""

    origin: str
    target: str
    kinds: tuple[str, ...]


def _owner(system: System, kind: str, state: State, index: int) -> str:
    owners = [m for m in ALL_MACHINES if kind in m.triggers]
    if not owners:
        if kind not in ACTORS:
            raise SpecError(f"model step {kind!r} is no machine's trigger and no actor's")
        return ACTORS[kind]
    if len(owners) == 1:
        return owners[0].name
    return _call_machine(system, system.calls_of(state)[index])


def _call_machine(system: System, c: tuple[int, ...]) -> str:
    single = system.single[c[s.T]][c[s.POL]]
    return (CALL_SINGLE_ATTEMPT_TOOL if single else CALL_TOOL).name


def moved(system: System, before: State, after: State) -> set[str]:
    """The machines whose state differs between two states (a new call moves its machine)."""
    out: set[str] = set()
    nw = system.workers
    if before[s.NG: s.NG + nw] != after[s.NG: s.NG + nw]:
        out.add("Worker")
    if before[s.TE] != after[s.TE]:
        out.add("PlainLedger")
    calls0, calls1 = system.calls_of(before), system.calls_of(after)
    for i, c1 in enumerate(calls1):
        c0 = calls0[i] if i < len(calls0) else None
        if c0 is None or c0[s.CS] != c1[s.CS]:
            out.add(_call_machine(system, c1))
        if (c0 is None and c1[s.AS] != s.A_NONE) or (
                c0 is not None and (c0[s.AS], c0[s.NATT]) != (c1[s.AS], c1[s.NATT])):
            out.add("Attempt")
        if c0 is not None and system.runs(c0[s.RUNS]) != system.runs(c1[s.RUNS]):
            out.add("Run")
        if c0 is not None and c0[s.EFF] != c1[s.EFF]:
            out.add("KeyedLedger")
    return out


@cache
def interactions(config: ModelConfig = BOUND) -> tuple[Interaction, ...]:
    """Every (origin, target) pair some transition within `config` shows, with its steps
    (remembered per bound: the model is pure, and the default bound takes seconds)."""
    system = System(config)
    start = system.initial()
    seen = {system.canonical(start)}
    queue = deque([start])
    found: dict[tuple[str, str], set[str]] = {}
    while queue:
        state = queue.popleft()
        for succ in system.successors(state):
            kind, index, _ = succ.label
            origin = _owner(system, kind, state, index)
            for target in sorted(moved(system, state, succ.state) - {origin}):
                found.setdefault((origin, target), set()).add(kind)
            canonical = system.canonical(succ.state)
            if canonical not in seen:
                seen.add(canonical)
                queue.append(succ.state)
    return tuple(Interaction(o, t, tuple(sorted(k))) for (o, t), k in sorted(found.items()))


LEGEND = (
    ("box", "a component machine"),
    ("ellipse", "an actor of the environment whose steps are no machine's trigger"),
    ("A -> B labelled t", "A's step t changes B's state"),
    ("no arrow", "no step changes the other's state: time_out leaves the run going "
     "(TC-AMO-3)"),
)


def overview_dot(config: ModelConfig = BOUND) -> str:
    """The overview diagram's DOT: machines as boxes, the environment's actors as ellipses, an
    arrow per interaction labelled with the steps that make it, and a legend."""
    found = interactions(config)
    graph = graphviz.Digraph("overview", graph_attr={
        **PAGE, "label": legend_label("How the machines interact (found by exploring the model)",
                                      LEGEND)}, node_attr=FONT, edge_attr=FONT)
    actors = sorted({i.origin for i in found} & set(ACTORS.values()))
    for machine in ALL_MACHINES:
        graph.node(machine.name, shape="box", style="rounded,filled", fillcolor="white")
    for actor in actors:
        graph.node(actor, shape="ellipse", style="filled", fillcolor=palette.ACTOR)
    for i in found:
        graph.edge(i.origin, i.target, label=wrapped(", ".join(i.kinds)))
    return str(graph.source)
