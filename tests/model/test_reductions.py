"""Every reduction keeps every verdict: with and without symmetry, with exact states or 64-bit
fingerprints, on one process or several, the same verdict, the same witnessed
sometimes-properties and counterexamples of the same length, on every bound small enough to
explore each way; and every model mutant is caught under each, by the property it breaks.

Partial-order reduction keeps the verdict, the witnessed and unwitnessed sometimes-properties
and the violated properties, but not always the counterexample lengths: breadth-first search
finds the shortest path of the reduced graph, and the full graph's shortest may interleave a
step the ample sets postpone (a crash before another call's step, say), so a counterexample
under POR is at least as long, never shorter."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from atmostonce.model import check, mutants
from atmostonce.model.check import DEFAULT
from atmostonce.model.config import ModelConfig
from atmostonce.model.explorer import Explorer, Result
from atmostonce.model.mutants import ModelMutant
from atmostonce.model.parallel import ParallelExplorer
from atmostonce.model.por import MUTANTS as POR_MUTANTS
from atmostonce.model.system import System
from atmostonce.model.trace import Paths, build
from atmostonce.model.visited import missed_probability

BOUNDS = {
    "no faults": DEFAULT.with_(faults=0),
    "one fault, no re-ask, no policy change": DEFAULT.with_(faults=1, reasks=0,
                                                            policy_changes=0),
    "three workers, one fault": DEFAULT.with_(workers=3, faults=1, reasks=0, policy_changes=0),
}
"""Bounds each way explores in a second or two."""

POR_BOUNDS = {
    **BOUNDS,
    "one fault, no time-out": DEFAULT.with_(faults=1, reasks=0, policy_changes=0, timeouts=0),
    "two calls, one fault, no restart or time-out": DEFAULT.with_(
        calls=2, faults=1, reasks=0, policy_changes=0, timeouts=0, restarts=0),
}
"""Bounds explored with and without partial-order reduction: those above, one where a call's
steps sit beside crashes with no time-out to force a full expansion (the reduction mutant's
bound), and one with two concurrent calls (24,803 states unreduced)."""

Way = Callable[[System], tuple[Paths, Result]]


def _serial(**options: object) -> Way:
    def explore(system: System) -> tuple[Paths, Result]:
        explorer = Explorer(system, **options)  # type: ignore[arg-type]
        return explorer, explorer.run()
    return explore


def _parallel(fingerprints: bool) -> Way:
    def explore(system: System) -> tuple[Paths, Result]:
        explorer = ParallelExplorer(system, 2, fingerprints=fingerprints, warm_up=1)
        return explorer, explorer.run()
    return explore


REDUCED: dict[str, Way] = {
    "without symmetry": _serial(symmetry=False),
    "fingerprints": _serial(visited="fingerprint"),
    "2 processes": _parallel(fingerprints=False),
    "2 processes, fingerprints": _parallel(fingerprints=True),
}
"""Each way against the serial explorer with symmetry and exact states."""


def _verdict(explored: tuple[Paths, Result]) -> tuple[object, ...]:
    explorer, result = explored
    lengths = sorted((v.property, len(build(explorer, v, "counterexample").steps))
                     for v in result.violations)
    return result.ok, result.complete, sorted(result.witnesses), result.unwitnessed, lengths


@pytest.mark.parametrize("way", REDUCED)
@pytest.mark.parametrize("bound", BOUNDS)
def test_a_reduction_keeps_the_verdict_witnesses_and_counterexample_lengths(
        bound: str, way: str) -> None:
    config: ModelConfig = BOUNDS[bound]
    plain = _serial()(System(config))
    reduced = REDUCED[way](System(config))
    assert _verdict(reduced) == _verdict(plain)
    if way != "without symmetry":
        assert (reduced[1].states, reduced[1].transitions, reduced[1].quiescent) == (
            plain[1].states, plain[1].transitions, plain[1].quiescent)
        assert reduced[1].fired == plain[1].fired


def test_symmetry_reduces_the_states_where_workers_are_interchangeable() -> None:
    config = BOUNDS["one fault, no re-ask, no policy change"]
    assert Explorer(System(config)).run().states < Explorer(System(config),
                                                              symmetry=False).run().states


@pytest.mark.parametrize("way", REDUCED)
@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=lambda m: m.name)
def test_every_mutant_is_caught_under_every_reduction(mutant: ModelMutant, way: str) -> None:
    config = check.with_mutant(DEFAULT, mutant.name)
    plain = _serial()(System(config, check.choices_for(config)))
    explorer, result = REDUCED[way](System(config, check.choices_for(config)))
    caught = {v.property: v for v in result.violations}
    assert mutant.expect in caught, f"{mutant.name} under {way}: caught by {set(caught)}"
    expected = next(v for v in plain[1].violations if v.property == mutant.expect)
    assert len(build(explorer, caught[mutant.expect], "counterexample").steps) == len(
        build(plain[0], expected, "counterexample").steps)


def test_the_chance_of_a_missed_state_is_tlcs_estimate() -> None:
    assert missed_probability(2 ** 32) == 0.5
    assert missed_probability(465_946) == pytest.approx(465_946 ** 2 / 2 ** 65)
    assert missed_probability(2 ** 40) == 1.0


def test_auto_keeps_states_exactly_while_they_are_few() -> None:
    result = Explorer(System(BOUNDS["no faults"]), visited="auto").run()
    assert result.visited == "exact"


def test_auto_turns_to_fingerprints_past_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from atmostonce.model import explorer as explorer_module

    monkeypatch.setattr(explorer_module, "AUTO_EXACT_LIMIT", 100)
    config = BOUNDS["one fault, no re-ask, no policy change"]
    switched = Explorer(System(config), visited="auto")
    result = switched.run()
    assert result.visited == "fingerprint"
    assert result.states == Explorer(System(config)).run().states
    assert switched.path(result.states - 1)[-1][1] is not None


POR: dict[str, Way] = {
    "por": _serial(reduction="por"),
    "por, fingerprints": _serial(reduction="por", visited="fingerprint"),
    "por without symmetry": _serial(reduction="por", symmetry=False),
}


def _kept(explored: tuple[Paths, Result]) -> tuple[object, ...]:
    """What partial-order reduction keeps: verdict, witnesses, violated properties."""
    result = explored[1]
    return (result.ok, result.complete, sorted(result.witnesses), result.unwitnessed,
            sorted(v.property for v in result.violations))


def _lengths(explored: tuple[Paths, Result]) -> dict[str, int]:
    explorer, result = explored
    return {v.property: len(build(explorer, v, "counterexample").steps)
            for v in result.violations}


@pytest.mark.parametrize("way", POR)
@pytest.mark.parametrize("bound", POR_BOUNDS)
def test_partial_order_reduction_keeps_the_verdict_and_the_witnesses(bound: str,
                                                                      way: str) -> None:
    config = POR_BOUNDS[bound]
    plain = _serial()(System(config))
    reduced = POR[way](System(config))
    assert _kept(reduced) == _kept(plain)
    full = _lengths(plain)
    assert all(length >= full[p] for p, length in _lengths(reduced).items())


def test_partial_order_reduction_explores_fewer_states_and_transitions() -> None:
    config = POR_BOUNDS["one fault, no time-out"]
    plain = Explorer(System(config)).run()
    reduced = Explorer(System(config), reduction="por").run()
    assert reduced.states < plain.states
    assert reduced.transitions < plain.transitions


@pytest.mark.parametrize("way", POR)
@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=lambda m: m.name)
def test_every_mutant_is_caught_under_partial_order_reduction(mutant: ModelMutant,
                                                              way: str) -> None:
    config = check.with_mutant(DEFAULT, mutant.name)
    plain = _serial()(System(config, check.choices_for(config)))
    reduced = POR[way](System(config, check.choices_for(config)))
    lengths = _lengths(reduced)
    assert mutant.expect in lengths, f"{mutant.name} under {way}: caught by {set(lengths)}"
    assert lengths[mutant.expect] >= _lengths(plain)[mutant.expect]


@pytest.mark.parametrize("name", POR_MUTANTS)
def test_the_comparison_catches_a_broken_reduction(name: str) -> None:
    config = POR_BOUNDS["one fault, no time-out"]
    plain = _serial()(System(config))
    broken = _serial(reduction="por", reduction_mutant=name)(System(config))
    assert _kept(broken) != _kept(plain)


def test_an_unknown_reduction_is_refused() -> None:
    with pytest.raises(ValueError, match="reduction must be one of none, por"):
        Explorer(System(BOUNDS["no faults"]), reduction="sleep")


def test_partial_order_reduction_is_off_on_several_processes_and_the_report_says_so() -> None:
    report = check.run(BOUNDS["no faults"], processes=2, reduction="por", with_findings=False)
    assert report.reduction == "none"
    assert "partial-order reduction off: it runs on one process" in check.render(report)
    single = check.run(BOUNDS["no faults"], reduction="por", with_findings=False)
    assert single.reduction == "por"
    assert "partial-order reduction: ample sets" in check.render(single)
