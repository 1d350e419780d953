"""The probes' one table: each probe in one shape, its clauses registered and named where it is
written, and the one runner giving the first finding's verdict (what verify and the mutation
pipeline both run)."""

from __future__ import annotations

import inspect

import pytest

from atmostonce.check.probes.table import PROBES, Probe, first_problems
from atmostonce.executor import reference
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.spec.clauses import all_clauses
from atmostonce.spec.protocol import Ask, Command, Event, ExecutorConfig


@pytest.mark.parametrize("each", PROBES, ids=[p.name for p in PROBES])
def test_each_probe_pins_registered_clauses_its_module_names(each: Probe) -> None:
    known = {clause.id for clause in all_clauses()}
    assert each.clauses
    assert set(each.clauses) <= known
    module = inspect.getmodule(each.run)
    if each.name == "bad input":
        from atmostonce.check.probes import bad_input as module
    doc = inspect.getdoc(module) or ""
    assert [c for c in each.clauses if c not in doc] == []
    assert each.drives
    assert each.requires
    assert each.verdict.isupper()


def test_names_and_verdicts_are_unique() -> None:
    assert len({p.name for p in PROBES}) == len({p.verdict for p in PROBES}) == len(PROBES)


def test_the_reference_passes_every_probe() -> None:
    assert first_problems(reference, ExecutorConfig()) == ("", [])


class TakesEmptyIds(ReferenceExecutor):
    def handle(self, event: Event) -> list[Command]:
        if isinstance(event, Ask) and not event.turn_id:
            return []
        return super().handle(event)


def test_the_first_probe_that_finds_something_gives_the_verdict() -> None:
    verdict, problems = first_problems(TakesEmptyIds, ExecutorConfig())
    assert verdict == PROBES[0].verdict
    assert problems == ["took bad input: D-2: an ask with turn_id='' was taken (commands []), "
                        "not refused with a SpecError: its key is ambiguous"]
