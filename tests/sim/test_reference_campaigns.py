"""A short campaign of every fault profile is clean on the reference executor, and the runs
really contain what each profile promises."""

from __future__ import annotations

import pytest

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.executor import reference
from atmostonce.sim.campaign import campaign
from atmostonce.sim.faults import PROFILES
from atmostonce.spec.properties import Kind, of_kind


@pytest.mark.parametrize("name", list(PROFILES))
def test_a_short_campaign_is_clean_on_the_reference(name: str) -> None:
    result = campaign(range(8), name, reference, DEFAULT_EXECUTOR)
    assert result.ok, "\n".join(v.line() for f in result.failures for v in f.run.violations)
    assert result.totals.calls > 500
    assert sum(sum(row.values()) for row in result.totals.records.values()) == result.totals.calls


def test_the_reference_never_records_a_call_twice_or_leaves_one_without_a_record() -> None:
    result = campaign(range(8, 12), "chaos", reference, DEFAULT_EXECUTOR)
    assert result.ok
    assert all("none" not in row for row in result.totals.records.values())


def test_a_chaos_campaign_witnesses_every_sometimes_property() -> None:
    result = campaign(range(100), "chaos", reference, DEFAULT_EXECUTOR)
    assert result.ok
    assert {p.id for p in of_kind(Kind.SOMETIMES)} <= result.totals.witnessed
