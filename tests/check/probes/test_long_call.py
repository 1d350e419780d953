"""A call retried hundreds of times must survive a restart exactly (D-8, D-30): the probe
passes the reference executor and catches one whose recovery breaks past small attempt
numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from atmostonce.check.probes.long_call import probe_long_call
from atmostonce.executor import reference
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import JSON, Command, ExecutorConfig


def test_the_reference_keeps_a_call_of_300_attempts_across_a_restart() -> None:
    assert probe_long_call(reference, ExecutorConfig()) == []


class SmallNumbers:
    """Recovers only attempt numbers a small-int shortcut would hold (up to 256)."""

    def __init__(self, config: ExecutorConfig) -> None:
        self.inner = reference(config)

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        for entry in journal:
            number = entry.get("number")
            if isinstance(number, int) and number > 256:
                raise SpecError(f"attempt {number} follows attempt {number - 1}")
        return self.inner.recover(journal, at)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.clause("D-8")
def test_a_recovery_that_breaks_past_256_attempts_is_caught() -> None:
    problems = probe_long_call(SmallNumbers, ExecutorConfig())
    assert problems == ["D-8: the executor refused the journal of a call with 300 attempts: "
                        "attempt 257 follows attempt 256"]


class Forgets:
    """Shows the call's first 100 attempts only."""

    def __init__(self, config: ExecutorConfig) -> None:
        self.inner = reference(config)

    def snapshot(self, session_id: str) -> Any:
        shown = self.inner.snapshot(session_id)
        return replace(shown, tool_calls=tuple(replace(v, attempts=v.attempts[:100])
                                               for v in shown.tool_calls))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.clause("D-30")
def test_a_history_that_drops_attempts_is_caught() -> None:
    assert probe_long_call(Forgets, ExecutorConfig()) == [
        "TC-REC-RETRY: a call allowed 300 attempts, each lost to its worker, shows 100 attempts"]
