"""The committed diagrams are the ones the model's definitions draw today, and they show what a
docs writer needs: initial and terminal states, guards, a legend and, given counts, how often
each transition was taken."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from atmostonce import palette
from atmostonce.model import diagrams
from atmostonce.model.guards import GUARDS
from atmostonce.model.machines import ALL_MACHINES, ATTEMPT, CALL_TOOL, RUN, MachineDef
from atmostonce.spec.errors import SpecError

COMMITTED = Path(__file__).resolve().parents[2] / "diagrams"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


def _node(dot: str, name: str) -> str:
    match = re.search(rf"^\t{name} \[(.*)\]$", dot, re.MULTILINE)
    assert match, f"no node {name}"
    return match.group(1)


def _edge_lines(dot: str) -> list[str]:
    return [line.strip() for line in dot.splitlines() if " -> " in line]


@pytest.fixture(scope="module")
def sources() -> dict[str, str]:
    return diagrams.all_sources()


@pytest.mark.parametrize("stem", [*(m.name for m in ALL_MACHINES), "overview"])
def test_committed_dot_is_not_stale(stem: str, sources: dict[str, str]) -> None:
    committed = COMMITTED / f"{stem}.dot"
    assert committed.exists(), f"run `atmostonce diagrams` to create {committed}"
    assert committed.read_text() == sources[stem], (
        f"{committed} is stale: run `atmostonce diagrams`")


def test_diagrams_draw_svg_where_dot_exists(tmp_path: Path) -> None:
    written, note = diagrams.write(tmp_path)
    assert len(written) == len(ALL_MACHINES) + 1
    if shutil.which("dot") is None:
        assert "not installed" in note
        pytest.skip("Graphviz's dot is not installed here")
    for w in written:
        assert w.svg is not None
        assert w.svg.read_text().lstrip().startswith("<?xml")


def test_terminal_states_are_double_bordered_and_only_they() -> None:
    dot = diagrams.machine_dot(CALL_TOOL)
    for state in CALL_TOOL.states:
        double = "peripheries=2" in _node(dot, state)
        assert double == (state in ("succeeded", "failed", "rejected", "outcome_unknown")), state
    assert CALL_TOOL.terminal == ("succeeded", "failed", "rejected", "outcome_unknown")
    assert RUN.terminal == ("finished", "killed")
    assert ATTEMPT.terminal == ()  # every ended attempt is reset for the next one


def test_initial_state_is_filled_and_named_in_the_legend() -> None:
    dot = diagrams.machine_dot(ATTEMPT)
    assert palette.INITIAL in _node(dot, "none")
    assert palette.INITIAL not in _node(dot, "queued")
    legend = dot.splitlines()[1]
    assert legend.startswith("\tgraph [")
    assert "label=<<table" in legend
    for words in ("initial state", "terminal state", "taken when guard"):
        assert words in legend
    assert "never taken" not in dot  # the frequency key appears only with counts


def test_guards_from_the_definitions_label_the_edges() -> None:
    dot = diagrams.machine_dot(CALL_TOOL)
    lines = _edge_lines(dot)
    assert 'asked -> awaiting_approval [label="needs_approval\\n[requires_approval]"]' in lines
    assert 'asked -> attempting [label="start\\n[!requires_approval]"]' in lines
    assert ('attempting -> attempting [label="retry\\n[infra_failure &\\nattempts_left]"]'
            in lines)
    assert any("unknown\\n[idempotent_write &\\nreached &\\ninfra_failure &\\n!attempts_left]"
               in line for line in lines)
    for edge in CALL_TOOL.edges:
        for name in (*edge.conditions, *edge.unless):
            assert GUARDS[name].text.replace("'", "&#x27;") in dot.replace("<br/>", " "), name
    assert "calls of read, idempotent_write" in dot


def test_every_transition_is_listed_once() -> None:
    for machine in ALL_MACHINES:
        listed = diagrams.edges(machine)
        assert len(listed) == len(set(listed)) == sum(len(e.sources) for e in machine.edges)
        assert len(_edge_lines(diagrams.machine_dot(machine))) == len(listed)
    assert ("started", "cancel", "started") in diagrams.edges(RUN)


def test_counts_colour_edges_and_never_taken_ones_are_dashed_red() -> None:
    taken = {("started", "apply", "applied"): 1000, ("applied", "kill", "killed"): 1,
             ("started", "kill", "killed"): 0}
    dot = diagrams.machine_dot(RUN, taken)
    lines = {line.split(" [")[0] + " " + re.findall(r'label="?([a-z_]+)', line)[0]: line
             for line in _edge_lines(dot)}
    busy, once = lines["started -> applied apply"], lines["applied -> killed kill"]
    for mark in ("\N{MULTIPLICATION SIGN}1,000", palette.SHADES[-1], "penwidth=5.0"):
        assert mark in busy
    for mark in ("\N{MULTIPLICATION SIGN}1\"", palette.SHADES[0], "penwidth=1.0"):
        assert mark in once
    never = [line for line in _edge_lines(dot) if "style=dashed" in line]
    assert len(never) == len(diagrams.edges(RUN)) - 2
    assert all(f'color="{palette.NEVER}"' in line for line in never)
    assert "never taken" in dot


@pytest.mark.parametrize(("taken", "says"), [
    ({("started", "apply", "killed"): 1}, "Run has no transition apply from started to killed"),
    ({("started", "apply", "applied"): -1}, "count must be a whole number of at least 0"),
])
def test_counts_of_transitions_the_machine_lacks_are_refused(
        taken: dict[tuple[str, str, str], int], says: str) -> None:
    with pytest.raises(SpecError, match=says):
        diagrams.machine_dot(RUN, taken)


def test_coverage_keys_regroup_per_machine() -> None:
    grouped = diagrams.by_machine({("Run", "started", "apply"): 3, ("Worker", "up", "crash"): 1})
    assert grouped == {"Run": {("started", "apply", "applied"): 3},
                       "Worker": {("up", "crash", "crashed"): 1}}
    with pytest.raises(SpecError, match="Run has no transition fly from started"):
        diagrams.by_machine({("Run", "started", "fly"): 1})


@needs_dot
@pytest.mark.parametrize("machine", ALL_MACHINES, ids=lambda m: m.name)
def test_svg_of_draws_parseable_svg(machine: MachineDef) -> None:
    taken = {edge: i for i, edge in enumerate(diagrams.edges(machine))}
    root = ET.fromstring(diagrams.svg_of(diagrams.machine_dot(machine, taken)))
    assert root.tag.endswith("svg")


@needs_dot
def test_svg_of_bad_dot_is_one_line() -> None:
    with pytest.raises(SpecError, match="could not draw") as error:
        diagrams.svg_of("digraph { a -> }")
    assert "\n" not in str(error.value)


def test_svg_of_without_dot_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SpecError, match="apt-get install graphviz"):
        diagrams.svg_of("digraph { a }")
