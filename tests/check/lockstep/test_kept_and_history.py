"""Conformance judges what the snapshot shows beyond each call's status: the effect class and
approval rule it kept (TC-SNAP-1), its approval deadline and the timer that keeps it (D-32),
and its attempt history (D-30). An executor whose snapshot misreports any of them, or that
waits for another deadline than the call kept, disagrees with the model; one that shows none
of them is not judged on them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from atmostonce.check.lockstep.conformance import replay_schedules
from atmostonce.executor import reference
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.state import Call
from atmostonce.model.check import DEFAULT
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import JSON, Command, Event, Executor, ExecutorConfig
from atmostonce.spec.session import AgentSnapshot, ToolCallView

SMALL = DEFAULT.with_(faults=1)
Shown = Callable[[ToolCallView], ToolCallView]


class _Shows:
    """The reference executor with its snapshot's calls passed through `shown`."""

    def __init__(self, config: ExecutorConfig, shown: Shown) -> None:
        self.inner = reference(config)
        self.shown = shown

    def handle(self, event: Event) -> list[Command]:
        return self.inner.handle(event)

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        return self.inner.recover(journal, at)

    def snapshot(self, session_id: str) -> AgentSnapshot:
        snapshot = self.inner.snapshot(session_id)
        return replace(snapshot, tool_calls=tuple(self.shown(v) for v in snapshot.tool_calls))


def _factory(shown: Shown) -> Callable[[ExecutorConfig], Executor]:
    return lambda config: _Shows(config, shown)


def _hides_hand_outs(view: ToolCallView) -> ToolCallView:
    return replace(view, attempts=tuple(replace(a, worker="", handed_at=None)
                                        for a in view.attempts))


def _drops_the_last_attempt(view: ToolCallView) -> ToolCallView:
    return replace(view, attempts=view.attempts[:-1])


def _says_read(view: ToolCallView) -> ToolCallView:
    return replace(view, effect=EffectClass.READ)


def _shows_the_setting(view: ToolCallView) -> ToolCallView:
    if view.approval_deadline is None:
        return view
    return replace(view, approval_deadline=300.0)


def _shows_nothing_new(view: ToolCallView) -> ToolCallView:
    return ToolCallView(view.turn_id, view.tool_call_id, view.tool, view.status, view.error,
                        view.idempotency_key)


@pytest.mark.clause("D-30", "TC-SNAP-1", "D-32")
@pytest.mark.parametrize(("shown", "says"), [
    (_hides_hand_outs, "handed to a worker in its history"),
    (_drops_the_last_attempt, "attempt(s) in its history"),
    (_says_read, "kept effect class read"),
    (_shows_the_setting, "approval deadline 300.0"),
], ids=lambda x: getattr(x, "__name__", "says"))
def test_a_snapshot_that_misreports_what_a_call_kept_or_its_history_disagrees(
        shown: Shown, says: str) -> None:
    result = replay_schedules(SMALL, _factory(shown), depth=5, edges=True)
    assert result.disagreements, "no schedule caught it"
    assert says in result.disagreements[0][1]


def _hides_the_history(view: ToolCallView) -> ToolCallView:
    return replace(view, attempts=(), history=False)


@pytest.mark.clause("D-30", "TC-SNAP-1")
@pytest.mark.parametrize(("shown", "says"), [
    (_shows_nothing_new, "shows no kept effect class or approval rule"),
    (_hides_the_history, "shows no attempt history"),
], ids=lambda x: getattr(x, "__name__", "says"))
def test_an_executor_that_hides_the_policy_or_history_a_call_kept_disagrees(
        shown: Shown, says: str) -> None:
    result = replay_schedules(SMALL, _factory(shown), depth=5, edges=True)
    assert result.disagreements, "no schedule caught it"
    assert says in result.disagreements[0][1]


class _DeadlineFromSetting(ReferenceExecutor):
    """A call waits for the server's approval deadline, not the one it kept (D-32)."""

    def deadline_of(self, call: Call) -> float:
        return self.config.approval_deadline


@pytest.mark.clause("D-32", "TC-SNAP-1")
def test_an_executor_that_waits_for_the_servers_deadline_disagrees() -> None:
    result = replay_schedules(SMALL, _DeadlineFromSetting, depth=9, edges=True)
    assert result.disagreements, "no schedule caught it"
    log, message = result.disagreements[0]
    assert "approval timer fires 300 s after the ask" in message
    assert "change_policy(0)" in log
