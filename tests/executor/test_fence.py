"""The fence option (D-6): a new call of a single-attempt tool waits while a run of that tool the
executor gave up on may still be going, and goes once that run is over."""

from __future__ import annotations

import pytest

from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import ExecutorConfig, TimerKind
from tests.executor.driver import Driver

NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE


def abandoned(fence: bool) -> tuple[Driver, str, str]:
    """A write whose attempt at w1 timed out while its run may go on, and a second call of it."""
    d = Driver(ExecutorConfig(fence=fence))
    d.open()
    d.policy("write", NONIDEM, requires_approval=False)
    d.policy("other", NONIDEM, requires_approval=False)
    d.ask("write", "c1")
    go = d.poll("w1")
    assert go is not None
    d.start("w1", go.attempt)
    d.fire(TimerKind.RUN_TIMEOUT, go.attempt)
    second = d.ask("write", "c2")
    return d, go.attempt, second


@pytest.mark.clause("D-6", "TC-AMO-4", "F-6")
def test_the_fence_holds_the_tool_until_the_abandoned_run_reports_its_end() -> None:
    d, old, second = abandoned(fence=True)
    assert d.poll("w2") is None
    other = d.ask("other", "c3")
    go = d.poll("w2")
    assert go is not None
    assert go.key == other, "the fence holds one tool, not the queue"
    d.finish("w1", old, ok=True)
    assert d.entries("run_over") == [{"type": "run_over", "at": d.now, "attempt": old,
                                      "worker": "w1"}]
    go = d.poll("w3")
    assert go is not None
    assert go.key == second


@pytest.mark.clause("D-6", "D-12")
def test_the_fence_opens_when_the_worker_of_the_abandoned_run_is_declared_lost() -> None:
    d, _, second = abandoned(fence=True)
    assert d.poll("w2") is None
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w1")
    assert d.entries("worker_lost")[0]["worker"] == "w1"
    go = d.poll("w2")
    assert go is not None
    assert go.key == second


@pytest.mark.clause("D-6")
def test_a_result_from_another_worker_does_not_open_the_fence() -> None:
    d, old, _ = abandoned(fence=True)
    d.finish("w2", old, ok=True)
    assert d.poll("w3") is None


@pytest.mark.clause("TC-AMO-4", "TC-AMO-3")
def test_without_the_fence_the_documented_double_run_can_happen() -> None:
    d, _, second = abandoned(fence=False)
    go = d.poll("w2")
    assert go is not None
    assert go.key == second
    assert go.key != d.entries("ask")[0]["key"], "the two runs carry two different keys"


@pytest.mark.clause("D-6", "TC-EFF-READ")
def test_reads_are_never_fenced() -> None:
    d, _, _ = abandoned(fence=True)
    d.policy("lookup", EffectClass.READ)
    key = d.ask("lookup", "c9")
    d.policy("write", EffectClass.READ)
    go = d.poll("w2")
    assert go is not None
    assert go.key == key
