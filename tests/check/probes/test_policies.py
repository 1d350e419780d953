"""verify's conformance layer resolves a call's policy over the whole input space (every
ToolPolicy, every combination of hints, every session default under either D-22 choice, a tool
nobody registered, and a policy change between two calls) and refuses an executor that
resolves any case otherwise than the spec."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from atmostonce import verify
from atmostonce.check.probes.policies import DEFAULTS, HINTS, POLICIES, cases, probe_policies
from atmostonce.executor import mutants, reference
from atmostonce.spec.protocol import Command, Event, ExecutorConfig, OpenSession, SetPolicy


class Front:
    """The reference executor behind a front that changes one kind of event on its way in."""

    def __init__(self, config: ExecutorConfig, change: Any) -> None:
        self.inner = reference(config)
        self.change = change

    def handle(self, event: Event) -> list[Command]:
        return self.inner.handle(self.change(event))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def fronted(change: Any) -> Any:
    return lambda config: Front(config, change)


@pytest.mark.clause("TC-POL-1", "D-1", "D-11", "D-22")
def test_the_cases_cover_every_policy_hint_default_and_an_unregistered_tool() -> None:
    every = list(cases())
    assert (len(POLICIES), len(HINTS), len(DEFAULTS)) == (13, 28, 5)
    assert len(every) == len(DEFAULTS) * 2 * (len(POLICIES) * len(HINTS) + 1)
    assert len(set(every)) == len(every)
    assert sum(1 for case in every if not case.registered) == 10


@pytest.mark.clause("TC-POL-1", "TC-APR-2", "TC-APR-5", "TC-SNAP-1", "TC-SNAP-2", "D-1", "D-22")
def test_the_reference_executor_resolves_every_case_as_the_spec() -> None:
    assert probe_policies(reference, ExecutorConfig()) == []


def test_an_executor_that_ignores_framework_metadata_is_caught() -> None:
    def no_hints(event: Event) -> Event:
        return replace(event, hints=None) if isinstance(event, SetPolicy) else event

    problems = probe_policies(fronted(no_hints), ExecutorConfig())
    assert len(problems) == 4
    assert "hints read_only=True" in problems[0] or "hints read_only=None" in problems[0]
    assert problems[-1].endswith("more cases resolved otherwise than the spec")


@pytest.mark.clause("D-1")
def test_an_executor_that_ignores_the_session_default_is_caught() -> None:
    def no_default(event: Event) -> Event:
        return replace(event, default_effect=None) if isinstance(event, OpenSession) else event

    problems = probe_policies(fronted(no_default), ExecutorConfig(), limit=1)
    assert problems[0].startswith("policy resolution: policy unset, hints none, session "
                                  "default read")


@pytest.mark.clause("D-22")
def test_an_executor_that_lets_hints_lower_a_floored_default_is_caught() -> None:
    def no_floor(event: Event) -> Event:
        return replace(event, hints_may_lower=True) if isinstance(event, OpenSession) else event

    problems = probe_policies(fronted(no_floor), ExecutorConfig(), limit=1)
    assert "hints may not lower it" in problems[0]


@pytest.mark.clause("TC-SNAP-1", "TC-SNAP-2")
def test_an_executor_whose_asked_calls_follow_a_later_policy_is_caught() -> None:
    problems = probe_policies(mutants.policy_change_applies_to_asked_calls, ExecutorConfig(),
                              limit=1)
    assert "the call ended with" in problems[0]


@pytest.mark.clause("D-11")
def test_verify_conformance_fails_an_executor_its_schedules_cannot_tell_from_the_reference(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_idempotent_hint(event: Event) -> Event:
        if isinstance(event, SetPolicy) and event.hints is not None:
            return replace(event, hints=replace(event.hints, idempotent=None))
        return event

    monkeypatch.setattr(verify, "CONFORMANCE_DEPTH", 3)
    result = verify.check_conformance("no_idempotent_hint", fronted(no_idempotent_hint))
    assert not result.ok
    assert "RESOLVES POLICIES OTHERWISE THAN THE SPEC" in result.summary
    assert "idempotent=True" in result.details[0]
