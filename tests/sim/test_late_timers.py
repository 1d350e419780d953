"""Late timers (`FaultKind.LATE_TIMERS`): the server's timers fire late while it goes on
handling what it receives, as an event loop that stalled runs what it read before the timers
that came due. An answer can then reach the executor after the call's kept deadline and before
the deadline's timer, which only a judgement by the clock refuses (D-32)."""

from __future__ import annotations

import pytest

from atmostonce.check.history import entries as h
from atmostonce.executor import reference
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.state import Call
from atmostonce.sim.engine import scenario
from atmostonce.sim.faults import FaultKind, profile
from atmostonce.sim.run import run_seed
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import Executor, ExecutorConfig, TimerKind

SEEDS = range(40)


class _DeadlineByTimerOnly(ReferenceExecutor):
    def deadline_passed(self, call: Call, at: float) -> bool:
        return False


def deadline_by_timer_only(config: ExecutorConfig) -> Executor:
    """Judges an answer by its deadline's timer alone, never by the clock."""
    return _DeadlineByTimerOnly(config)


def _late_answers(entries: list[h.Entry]) -> int:
    """Answers the executor handled after the call's deadline and before its timer fired."""
    due: dict[str, float] = {}
    fired: set[str] = set()
    late = 0
    for e in entries:
        if isinstance(e, h.TimerStarted) and e.kind is TimerKind.APPROVAL_DEADLINE:
            due.setdefault(e.key, e.at)
        elif isinstance(e, h.TimerFired) and e.kind is TimerKind.APPROVAL_DEADLINE:
            fired.add(e.key)
        elif isinstance(e, h.ApprovalAnswered) and e.key in due and e.key not in fired:
            late += not e.ok and "deadline" in e.text
    return late


def test_some_chaos_seeds_have_late_timers_and_the_rest_keep_their_schedules() -> None:
    chaos = profile("chaos")
    late = [s for s in SEEDS if FaultKind.LATE_TIMERS in scenario(s, chaos).kinds]
    assert 5 < len(late) < len(SEEDS)
    assert FaultKind.LATE_TIMERS not in scenario(0, profile("restarts")).kinds


@pytest.mark.clause("D-32", "D-7")
def test_an_answer_after_the_deadline_before_its_late_timer_is_refused_by_the_clock() -> None:
    refused = 0
    for seed in SEEDS:
        run = run_seed(seed, "chaos", reference, keep_history=True)
        assert run.ok, (seed, [v.line() for v in run.violations])
        assert run.history is not None
        refused += _late_answers(run.history.entries)
    assert refused > 0, "no answer came between a deadline and its late timer"


@pytest.mark.clause("D-32")
def test_an_executor_that_waits_for_its_timer_is_caught_by_the_simulation_alone() -> None:
    path = f"{__name__}:deadline_by_timer_only"
    for seed in SEEDS:
        run = run_seed(seed, "chaos", deadline_by_timer_only, path,
                       stop_on=PropertyId.A_APPROVAL)
        if any(v.property == PropertyId.A_APPROVAL for v in run.violations):
            assert FaultKind.LATE_TIMERS in run.scenario.kinds
            return
    pytest.fail("an approval accepted after the kept deadline escaped 40 chaos seeds")
