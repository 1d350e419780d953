"""The spec, model and conformance layers as sections of the HTML report."""

from __future__ import annotations

from collections.abc import Mapping

from atmostonce.report.counts import EdgeKey, layer_counts
from atmostonce.report.page import Chart, Check, Section

NO_MACHINES = ("it checks that every clause is implemented and tested and proves the spec's "
               "pure functions with CrossHair; it steps no machine")
MODEL_MEANING = ("how many transitions of the explored state graph (workers and calls up to "
                 "symmetry) take the edge")
CONFORMANCE_MEANING = ("how many replayed schedules end with a transition taking the edge: "
                       "each schedule is a state's shortest schedule followed by one transition "
                       "out of it, fence off and on together (the shared prefixes are not "
                       "counted again)")
STOPPED = ("the replay stopped at the first disagreement, so only part of the schedules ran "
           "and counting the rest would claim what was not replayed")


def spec_section(checks: tuple[Check, ...]) -> Section:
    return Section("spec", checks, not_measured=NO_MACHINES)


def model_section(check: Check, counts: Mapping[EdgeKey, int],
                  counterexamples: tuple[Chart, ...] = ()) -> Section:
    return Section("model", (check,), counts=layer_counts("model", MODEL_MEANING, counts),
                   counterexamples=counterexamples)


def conformance_section(check: Check, counts: Mapping[EdgeKey, int] | None,
                        counterexamples: tuple[Chart, ...] = ()) -> Section:
    if counts is None:
        return Section("conformance", (check,), not_measured=STOPPED,
                       counterexamples=counterexamples)
    return Section("conformance", (check,),
                   counts=layer_counts("conformance", CONFORMANCE_MEANING, counts),
                   counterexamples=counterexamples)


def not_checkable(layer: str, why: str) -> Section:
    """A layer that does not apply to the subject: listed, never counted as passed."""
    return Section(layer, (Check(layer, None, f"not checkable: {why}"),),
                   not_measured=f"the layer does not apply: {why}")


def summed(*counts: Mapping[EdgeKey, int]) -> dict[EdgeKey, int]:
    total: dict[EdgeKey, int] = {}
    for c in counts:
        for key, n in c.items():
            total[key] = total.get(key, 0) + n
    return total
