"""The workloads reach every input shape the page's rules turn on, and the coverage line counts
them from the history: a shape never reached at verify's defaults is a blind spot of the
workload, as an unwitnessed sometimes-property is one of the model."""

from __future__ import annotations

import pytest

from atmostonce import verify
from atmostonce.check.history import entries as h
from atmostonce.executor import reference
from atmostonce.executor.mutants import EXECUTOR_MUTANTS
from atmostonce.sim import workload
from atmostonce.sim.campaign import campaign
from atmostonce.sim.run import run_seed
from atmostonce.sim.shapes import SHAPES, Shape, ShapeCounter, shapes_line
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import TimerKind
from atmostonce.spec.session import ToolCallStatus

FIRST = 20
"""Seeds of verify's campaign within which every shape must occur: verify runs more."""

_E = EffectClass
PAST = REPLY_TEXT[ApprovalReply.DEADLINE_PASSED]


def test_every_shape_is_reached_within_the_first_seeds_of_verify_s_campaign() -> None:
    assert verify.SIMULATION_SEEDS >= FIRST
    result = campaign(range(FIRST), "chaos", reference)
    assert result.ok
    counts = dict(zip(SHAPES, result.totals.shapes, strict=True))
    assert all(n > 0 for n in counts.values()), shapes_line(result.totals.shapes)


def _count(*entries: h.Entry) -> dict[Shape, int]:
    return dict(zip(SHAPES, ShapeCounter().observe_all(entries).counts(), strict=True))


def _ask(key: str, tool: str, deadline: float | None = None) -> h.CallAsked:
    session, turn, call = key.split("/")
    return h.CallAsked(1.0, key, session, turn, call, tool, "{}", deadline)


def test_a_plain_history_has_no_shape() -> None:
    counts = _count(h.PolicySet(0.0, "read", ToolPolicy(_E.READ), None),
                    h.SessionOpened(0.0, "s1", None),
                    _ask("s1/t1/c1", "read"),
                    h.HandedOut(1.1, "w1", "a1", "s1/t1/c1", "read", True, "s1/t1/c1"),
                    h.RecordPublished(1.5, "s1/t1/c1", ToolCallStatus.SUCCEEDED, ""),
                    h.ServerRestarted(2.0, 5))
    assert set(counts.values()) == {0}


def test_each_shape_is_counted_from_the_history() -> None:
    both = ToolPolicy(_E.NON_IDEMPOTENT_WRITE)
    counts = _count(
        h.PolicySet(0.0, "write", both, ToolHints(read_only=True)),
        h.PolicySet(0.0, "read", ToolPolicy(_E.READ), None),
        h.SessionOpened(0.0, "s1", _E.NON_IDEMPOTENT_WRITE, False),
        h.SessionOpened(0.0, "s2", _E.READ),
        _ask("s1/t1/c1", "write", 30.0),
        _ask("s1/t1/c2", "nobody_registered"),
        h.ServerRestarted(1.2, 9),
        h.ApprovalAnswered(1.3, "s1/t1/c1", True, True, "accepted"),
        h.RecordPublished(1.4, "s1/t1/c2", ToolCallStatus.REJECTED, ""),
        _ask("s2/t1/c3", "read"),
        *(h.HandedOut(2.0 + i, f"w{i}", f"a{i}", "s2/t1/c3", "read", True, "s2/t1/c3")
          for i in range(3)),
        h.ServerRestarted(6.0, 20),
        _ask("s1/t2/c4", "write"),
        _ask("s1/t2/c5", "write"),
        h.TimerStarted(7.0, TimerKind.APPROVAL_DEADLINE, "s1/t2/c4", "s1/t2/c4"),
        h.TimerStarted(7.0, TimerKind.APPROVAL_DEADLINE, "s1/t2/c5", "s1/t2/c5"),
        h.ApprovalAnswered(18.0, "s1/t2/c4", True, False, PAST),
        h.TimerFired(18.5, TimerKind.APPROVAL_DEADLINE, "s1/t2/c4", "s1/t2/c4"),
        h.TimerFired(18.5, TimerKind.APPROVAL_DEADLINE, "s1/t2/c5", "s1/t2/c5"),
        h.ApprovalAnswered(19.0, "s1/t2/c5", True, False, PAST),
    )
    assert counts == {Shape.POLICY_AND_HINTS: 3, Shape.UNREGISTERED: 1,
                      Shape.SESSION_DEFAULT: 2, Shape.FLOOR: 1, Shape.CALL_DEADLINE: 1,
                      Shape.THREE_ATTEMPTS: 1, Shape.TWO_WAITING: 2,
                      Shape.RESTART_WAITING: 1, Shape.LATE_ANSWER: 1}


SEEDS = range(30)


@pytest.mark.clause("D-32")
def test_a_mutant_ignoring_the_ask_s_deadline_is_caught_only_with_per_call_deadlines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    mutant = EXECUTOR_MUTANTS["ask_deadline_ignored"]

    def caught() -> list[int]:
        return [seed for seed in SEEDS
                if not run_seed(seed, "chaos", mutant.factory, mutant.path,
                                stop_on=mutant.expect).ok]

    with_deadlines = caught()
    assert with_deadlines, "the simulation lets an executor ignore an ask's own deadline"
    monkeypatch.setattr(workload, "DEADLINE_SEEDS", 0.0)
    assert caught() == []
