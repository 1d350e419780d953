"""Workers pull work: the hand-out is durable before the go-ahead, an attempt goes to one worker
ever, and every attempt of a call passes the same key."""

from __future__ import annotations

import pytest

from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import (
    Event,
    ExecutorConfig,
    Finished,
    GoAhead,
    Heartbeat,
    NoWork,
    Persist,
    Poll,
    Started,
    StartTimer,
    StopTimer,
    TimerFired,
    TimerKind,
)
from atmostonce.spec.session import ToolCallStatus
from tests.executor.driver import Driver

READ = EffectClass.READ
NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE


def ready(effect: EffectClass = READ, config: ExecutorConfig | None = None) -> Driver:
    d = Driver(config or ExecutorConfig())
    d.open()
    d.policy("tool", effect, requires_approval=False)
    return d


@pytest.mark.clause("D-5", "TC-AMO-1")
def test_hand_out_is_persisted_before_the_go_ahead() -> None:
    d = ready()
    key = d.ask("tool", arguments='{"q": 1}')
    commands = d.send(Poll(d.now, "w1"))
    kinds = [type(c) for c in commands]
    persist = kinds.index(Persist)
    go = kinds.index(GoAhead)
    assert persist < go
    entry = commands[persist]
    assert isinstance(entry, Persist)
    assert entry.entry["type"] == "handed"
    assert (entry.entry["attempt"], entry.entry["worker"]) == (f"{key}#1", "w1")
    assert StopTimer(f"queue_timeout:{key}#1") in commands
    go_ahead = commands[go]
    assert go_ahead == GoAhead("w1", f"{key}#1", key, "tool", '{"q": 1}',
                               ExecutorConfig().lease)


@pytest.mark.clause("TC-AMO-1")
def test_a_worker_holding_an_attempt_gets_no_more_work() -> None:
    d = ready()
    d.ask("tool", "c1")
    d.ask("tool", "c2")
    assert d.poll("w1") is not None
    assert d.poll("w1") is None
    assert NoWork("w1") in d.log
    assert d.poll("w2") is not None


@pytest.mark.clause("TC-AMO-1")
def test_work_goes_out_oldest_first_and_nothing_queued_means_no_work() -> None:
    d = ready()
    assert d.poll("w0") is None
    first, second = d.ask("tool", "c1"), d.ask("tool", "c2")
    go1, go2 = d.poll("w1"), d.poll("w2")
    assert go1 is not None
    assert go2 is not None
    assert (go1.key, go2.key) == (first, second)


@pytest.mark.clause("TC-AMO-1", "TC-KEY-1", "TC-KEY-2", "TC-REC-RETRY")
def test_a_lost_attempt_is_never_handed_again_and_the_retry_keeps_the_key() -> None:
    d = ready(READ)
    key = d.ask("tool", "c7", turn="t3", session="s1")
    assert key == "s1/t3/c7"
    go1 = d.poll("w1")
    assert go1 is not None
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w1")
    assert d.poll("w2") is None
    d.fire(TimerKind.RETRY_BACKOFF, key)
    go2 = d.poll("w2")
    assert go2 is not None
    assert go2.attempt == f"{key}#2" != go1.attempt
    assert go1.key == go2.key == key
    handed = [(e["attempt"], e["worker"]) for e in d.entries("handed")]
    assert handed == [(f"{key}#1", "w1"), (f"{key}#2", "w2")]


@pytest.mark.clause("TC-REC-LOST", "D-12")
def test_every_worker_message_restarts_its_heartbeat_timeout() -> None:
    d = ready()
    d.ask("tool")
    go = d.poll("w1")
    assert go is not None
    events: list[Event] = [Started(d.now, "w1", go.attempt), Heartbeat(d.now, "w1", go.attempt),
                           Finished(d.now, "w1", go.attempt, True)]
    for event in events:
        commands = d.send(event)
        assert StartTimer("heartbeat_timeout:w1", ExecutorConfig().heartbeat_timeout,
                          TimerKind.HEARTBEAT_TIMEOUT, "w1") == commands[0]


@pytest.mark.clause("D-9", "TC-REC-LOST")
def test_the_run_timeout_runs_from_the_go_ahead_and_again_from_started() -> None:
    d = ready()
    key = d.ask("tool")
    go = d.poll("w1")
    assert go is not None
    assert d.pending(TimerKind.RUN_TIMEOUT, go.attempt)
    assert d.timers[(TimerKind.RUN_TIMEOUT, go.attempt)].key == key
    restarted = [c for c in d.start("w1", go.attempt) if isinstance(c, StartTimer)]
    assert [t.kind for t in restarted] == [TimerKind.HEARTBEAT_TIMEOUT, TimerKind.RUN_TIMEOUT]
    d.finish("w1", go.attempt)
    assert not d.pending(TimerKind.RUN_TIMEOUT, go.attempt)


@pytest.mark.clause("TC-AMO-1", "TC-REC-1")
def test_events_about_unknown_things_change_nothing() -> None:
    d = ready()
    key = d.ask("tool")
    before = d.snapshot()
    assert d.send(TimerFired(d.now, "no-such-timer")) == []
    assert d.send(TimerFired(d.now, "run_timeout:nothing#1")) == []
    assert d.send(TimerFired(d.now, "heartbeat_timeout:stranger")) == []
    for event in (Started(d.now, "w9", "x#1"), Finished(d.now, "w9", "x#1", True),
                  Heartbeat(d.now, "w9", "x#1"), Finished(d.now, "w9", f"{key}#1", True)):
        commands = d.send(event)
        assert all(isinstance(c, StartTimer) for c in commands)
    assert d.snapshot() == before
    assert d.view(key).status is ToolCallStatus.RUNNING


@pytest.mark.clause("TC-AMO-1")
def test_a_result_from_another_worker_does_not_end_the_attempt() -> None:
    d = ready()
    key = d.ask("tool")
    go = d.poll("w1")
    assert go is not None
    d.finish("w2", go.attempt)
    assert d.view(key).status is ToolCallStatus.RUNNING
    d.finish("w1", go.attempt)
    assert d.view(key).status is ToolCallStatus.SUCCEEDED


@pytest.mark.clause("TC-REC-LOST", "D-6")
def test_a_reconnecting_worker_loses_the_attempt_it_held_and_the_fence_trusts_its_list() -> None:
    d = ready(NONIDEM, ExecutorConfig(fence=True))
    key = d.ask("tool", "c1")
    go = d.poll("w1")
    assert go is not None
    d.connect("w1", running=(go.attempt,))
    assert d.view(key).status is ToolCallStatus.OUTCOME_UNKNOWN
    d.ask("tool", "c2")
    assert d.poll("w2") is None, "the worker says the old run goes on, so the fence holds"
    d.connect("w1", running=())
    assert d.poll("w2") is not None, "the worker says the old run is over"
