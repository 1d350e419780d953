"""The snapshot shows, for each call, its attempt history (D-30), the effect class and approval
rule it kept when it was asked (TC-SNAP-1) and its own approval deadline (D-32), on the
reference executor and across a restart."""

from __future__ import annotations

import pytest

from atmostonce.executor import before_upgrade, reference
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import Ask, ExecutorConfig, SetPolicy, TimerKind
from atmostonce.spec.reconcile import NEVER_REACHED_FINDING, history_finding, never_reached
from atmostonce.spec.records import AttemptEnd, AttemptProgress
from atmostonce.spec.session import AttemptView, ToolCallStatus
from tests.executor.driver import SESSION, TURN, Driver

READ = EffectClass.READ
NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE


def ready(config: ExecutorConfig | None = None) -> Driver:
    d = Driver(config or ExecutorConfig(max_attempts=2, retry_backoff=0.0))
    d.open()
    d.policy("lookup", READ)
    d.policy("cancel", NONIDEM, requires_approval=False)
    return d


@pytest.mark.clause("D-30", "TC-RCN-HISTORY", "D-5")
def test_the_history_shows_each_attempt_queued_handed_started_and_ended_with_times() -> None:
    d = ready()
    key = d.ask("lookup", "c1")
    d.now = 1.0
    go = d.poll("w1")
    assert go is not None
    d.now = 2.0
    d.start("w1", go.attempt)
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w1")  # lost: a read gets another attempt
    d.fire(TimerKind.RETRY_BACKOFF, key)
    lost_at = d.now
    view = d.view(key)
    assert view.history
    assert view.attempts == (
        AttemptView(1, 0.0, "w1", 1.0, 2.0, lost_at, AttemptEnd.WORKER_LOST,
                    AttemptProgress.NOT_COMPLETED),
        AttemptView(2, lost_at),
    )
    assert [a.reached for a in view.attempts] == [True, False]


@pytest.mark.clause("D-30", "D-5", "TC-REC-NOTRUN", "TC-REC-LOST")
def test_the_history_and_the_error_name_each_attempts_progress_as_dex_does() -> None:
    """An attempt that ended without the tool's answer shows its progress in Dex's three
    names: NOT_STARTED when it never left the queue, NOT_COMPLETED once handed out; one the
    tool answered shows none; and the call's record's error names the progress too."""
    d = ready()
    key = d.ask("lookup", "c1")
    d.fire(TimerKind.QUEUE_TIMEOUT, f"{key}#1")
    d.fire(TimerKind.RETRY_BACKOFF, key)
    go = d.poll("w1")
    assert go is not None
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w1")
    view = d.view(key)
    assert [a.progress for a in view.attempts] == [AttemptProgress.NOT_STARTED,
                                                   AttemptProgress.NOT_COMPLETED]
    assert view.status is ToolCallStatus.FAILED
    assert view.error.endswith("(attempt progress NOT_COMPLETED)")
    unreached = d.ask("cancel", "c2")
    d.fire(TimerKind.QUEUE_TIMEOUT, f"{unreached}#1")
    assert d.view(unreached).error.endswith("(attempt progress NOT_STARTED)")
    answered = d.ask("cancel", "c3")
    d.run("w2", ok=True)
    assert [a.progress for a in d.view(answered).attempts] == [None]


@pytest.mark.clause("D-30", "D-5", "TC-REC-LOST")
def test_a_hand_out_without_started_counts_as_reached_in_the_history() -> None:
    d = ready()
    key = d.ask("cancel", "c1")
    assert d.poll("w1") is not None
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w1")
    view = d.view(key)
    assert view.status is ToolCallStatus.OUTCOME_UNKNOWN
    assert view.attempts[0].started_at is None
    assert view.attempts[0].reached
    assert not never_reached(view)
    assert history_finding(d.snapshot(), key) is None


@pytest.mark.clause("D-30", "TC-RCN-HISTORY", "TC-REC-NOTRUN")
def test_an_attempt_that_never_left_the_queue_shows_no_reach() -> None:
    d = ready()
    key = d.ask("cancel", "c1")
    d.fire(TimerKind.QUEUE_TIMEOUT, f"{key}#1")
    view = d.view(key)
    assert view.attempts[0].end is AttemptEnd.NOT_REACHED
    assert not view.attempts[0].reached
    assert never_reached(view)
    assert history_finding(d.snapshot(), key) == NEVER_REACHED_FINDING


@pytest.mark.clause("D-31", "D-30", "TC-RCN-HISTORY", "D-8", "TC-REC-1")
def test_an_upgraded_server_keeps_an_older_servers_unknown_record_and_its_unreached_history(
) -> None:
    """A server of an earlier version (`atmostonce.executor.before_upgrade`) ended a queued call
    outcome_unknown at its restart; the reference executor, started on that journal, keeps the
    record, and its history shows the attempt never reached a worker."""
    d = ready()
    d.factory = before_upgrade.executor
    key = d.ask("cancel", "c1")
    d.restart(after=5.0)
    assert d.view(key).status is ToolCallStatus.OUTCOME_UNKNOWN
    d.factory = reference
    d.restart(after=5.0)
    view = d.view(key)
    assert view.status is ToolCallStatus.OUTCOME_UNKNOWN
    assert view.attempts == (AttemptView(1, 0.0, "", None, None, 5.0, AttemptEnd.NOT_REACHED,
                                         AttemptProgress.NOT_STARTED),)
    # The older server's record names no progress (D-31): UNSPECIFIED, as Dex's old servers.
    assert view.error.endswith("(attempt progress UNSPECIFIED)")
    assert history_finding(d.snapshot(), key) == NEVER_REACHED_FINDING


@pytest.mark.clause("TC-SNAP-1", "TC-SNAP-2", "D-32")
def test_the_snapshot_shows_the_policy_and_deadline_each_call_kept() -> None:
    d = ready(ExecutorConfig(approval_deadline=300.0))
    d.send(SetPolicy(d.now, "refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, True, 120.0)))
    first = d.ask("refund", "c1")
    d.send(SetPolicy(d.now, "refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, True)))
    second = d.ask("refund", "c2")
    d.send(Ask(d.now, SESSION, TURN, "c3", "refund", "{}", approval_deadline=30.0))
    third = f"{SESSION}/{TURN}/c3"
    looked = d.ask("lookup", "c4")
    shown = {k: d.view(k) for k in (first, second, third, looked)}
    assert [(v.effect, v.requires_approval, v.approval_deadline) for v in shown.values()] == [
        (EffectClass.IDEMPOTENT_WRITE, True, 120.0),
        (EffectClass.IDEMPOTENT_WRITE, True, 300.0),
        (EffectClass.IDEMPOTENT_WRITE, True, 30.0),
        (READ, False, None),
    ]
    assert {k: d.timers[(TimerKind.APPROVAL_DEADLINE, k)].delay
            for k in (first, second, third)} == {first: 120.0, second: 300.0, third: 30.0}


@pytest.mark.clause("D-32", "D-8", "TC-SNAP-1")
def test_a_restart_keeps_each_waiting_calls_own_deadline() -> None:
    d = ready(ExecutorConfig(approval_deadline=300.0))
    d.send(SetPolicy(d.now, "refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, True, 120.0)))
    key = d.ask("refund", "c1")
    d.send(SetPolicy(d.now, "refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, True, 10.0)))
    d.restart(after=20.0)
    assert d.timers[(TimerKind.APPROVAL_DEADLINE, key)].delay == 100.0
    assert d.view(key).approval_deadline == 120.0
