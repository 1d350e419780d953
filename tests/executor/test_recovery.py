"""A restart (D-8): a fresh executor rebuilds everything from its journal, attempts out at a
worker end as lost to it, queued ones stay queued, and a malformed journal is refused."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from atmostonce.executor import reference
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import (
    JSON,
    ExecutorConfig,
    Persist,
    Poll,
    Publish,
    StartTimer,
    TimerKind,
)
from atmostonce.spec.records import (
    DID_NOT_RUN_PREFIX,
    OUTCOME_UNKNOWN_ERROR,
    AttemptEnd,
    unknown_detail,
)
from atmostonce.spec.session import AgentSnapshot, ToolCallStatus
from tests.executor.driver import Driver

READ = EffectClass.READ
NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE


def ready(effect: EffectClass = NONIDEM, fence: bool = False,
          requires_approval: bool | None = False) -> Driver:
    d = Driver(ExecutorConfig(fence=fence))
    d.open()
    d.policy("tool", effect, requires_approval=requires_approval)
    return d


@pytest.mark.clause("D-8", "TC-RCN-ASK", "TC-REC-UNK", "TC-AMO-2")
def test_an_attempt_handed_out_but_never_started_ends_outcome_unknown() -> None:
    d = ready()
    key = d.ask("tool")
    go = d.poll("w1")
    assert go is not None
    commands = d.restart(after=5.0)
    view = d.view(key)
    assert (view.status, view.error) == (
        ToolCallStatus.OUTCOME_UNKNOWN,
        f"{OUTCOME_UNKNOWN_ERROR}: {unknown_detail(AttemptEnd.WORKER_LOST)}")
    ended = d.entries("ended")[-1]
    assert (ended["attempt"], ended["end"], ended["may_still_run"]) == (
        go.attempt, "worker_lost", True)
    assert Publish(d.published[-1]) in commands
    assert d.pending(TimerKind.HEARTBEAT_TIMEOUT, "w1")
    assert d.poll("w2") is None


@pytest.mark.clause("D-8", "TC-REC-RETRY", "TC-REC-LOST")
def test_a_read_out_at_a_worker_is_tried_again_after_the_restart() -> None:
    d = ready(READ)
    key = d.ask("tool")
    go = d.poll("w1")
    assert go is not None
    d.start("w1", go.attempt)
    d.restart()
    assert d.view(key).status is ToolCallStatus.RUNNING
    assert not d.pending(TimerKind.HEARTBEAT_TIMEOUT, "w1"), "a read leaves no abandoned run"
    d.fire(TimerKind.RETRY_BACKOFF, key)
    again = d.poll("w1")
    assert again is not None
    assert (again.attempt, again.key) == (f"{key}#2", key)


@pytest.mark.clause("D-8", "TC-REC-NOTRUN", "D-10")
def test_a_queued_attempt_stays_queued_and_never_ran() -> None:
    d = ready()
    key = d.ask("tool")
    d.restart(after=20.0)
    timer = d.timers[(TimerKind.QUEUE_TIMEOUT, f"{key}#1")]
    assert timer.delay == ExecutorConfig().queue_timeout
    assert d.view(key).status is ToolCallStatus.RUNNING
    d.fire(TimerKind.QUEUE_TIMEOUT, f"{key}#1")
    view = d.view(key)
    assert view.status is ToolCallStatus.FAILED
    assert view.error.startswith(DID_NOT_RUN_PREFIX)


@pytest.mark.clause("D-8")
def test_workers_are_strangers_after_a_restart_until_they_poll() -> None:
    d = ready()
    key = d.ask("tool")
    d.restart()
    commands = d.send(Poll(d.now, "w1"))
    assert isinstance(commands[0], StartTimer)
    assert commands[0].subject == "w1"
    assert d.entries("handed")[-1]["attempt"] == f"{key}#1"


@pytest.mark.clause("D-8", "D-7", "TC-REC-REJ")
@pytest.mark.parametrize(("after", "left"), [(100.0, 200.0), (400.0, 0.0)])
def test_a_waiting_approval_keeps_what_is_left_of_its_deadline(after: float,
                                                               left: float) -> None:
    d = ready(requires_approval=True)
    key = d.ask("tool")
    d.restart(after=after)
    assert d.view(key).status is ToolCallStatus.AWAITING_APPROVAL
    assert d.timers[(TimerKind.APPROVAL_DEADLINE, key)].delay == left
    d.fire(TimerKind.APPROVAL_DEADLINE, key)
    assert d.view(key).status is ToolCallStatus.REJECTED


@pytest.mark.clause("D-8", "D-6", "D-12")
def test_the_abandoned_run_of_a_restart_holds_the_fence_until_it_ends() -> None:
    d = ready(fence=True)
    d.ask("tool", "c1")
    go = d.poll("w1")
    assert go is not None
    d.restart()
    second = d.ask("tool", "c2")
    assert d.poll("w2") is None
    d.connect("w1")
    d.finish("w1", go.attempt)
    again = d.poll("w2")
    assert again is not None
    assert again.key == second


@pytest.mark.clause("D-8", "D-12")
def test_a_worker_that_never_comes_back_is_declared_lost_and_releases_the_fence() -> None:
    d = ready(fence=True)
    d.ask("tool", "c1")
    assert d.poll("w1") is not None
    d.restart()
    d.ask("tool", "c2")
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w1")
    assert d.entries("worker_lost")[-1]["worker"] == "w1"
    assert d.poll("w2") is not None


def busy_journal() -> Driver:
    """Every kind of entry: policies, sessions, approvals, records, runs, user messages."""
    d = Driver(ExecutorConfig(fence=True))
    d.open()
    d.open("s2", EffectClass.IDEMPOTENT_WRITE)
    d.policy("write", NONIDEM, requires_approval=False)
    d.policy("ask-first", READ, requires_approval=True)
    d.policy("lookup", READ)
    d.ask("write", "c1")
    go = d.poll("w1")
    assert go is not None
    d.start("w1", go.attempt)
    d.fire(TimerKind.RUN_TIMEOUT, go.attempt)
    d.finish("w1", go.attempt)
    first = d.ask("ask-first", "c2")
    d.answer(first, True)
    d.run("w2", output="fine")
    d.ask("ask-first", "c3")
    d.ask("lookup", "c4")
    d.ask("lookup", "c5", session="s2")
    lost = d.poll("w3")
    assert lost is not None
    d.fire(TimerKind.HEARTBEAT_TIMEOUT, "w3")
    d.user_message("a note")
    d.ask("write", "c6")
    return d


def _started_unknown(snapshot: AgentSnapshot) -> AgentSnapshot:
    """The snapshot as a restart shows it: the Started times, which are not journaled, are not
    known for attempts from before it (D-30)."""
    calls = tuple(replace(v, attempts=tuple(replace(a, started_at=None) for a in v.attempts))
                  for v in snapshot.tool_calls)
    return replace(snapshot, tool_calls=calls)


@pytest.mark.clause("D-8", "TC-REC-1", "TC-RCN-FIND", "D-30", "D-32")
def test_a_restart_keeps_records_history_and_calls_waiting_or_queued() -> None:
    d = busy_journal()
    before = (d.snapshot(), d.snapshot("s2"))
    assert any(a.started_at is not None for v in before[0].tool_calls for a in v.attempts)
    records = len(d.entries("record"))
    d.restart()
    assert (d.snapshot(), d.snapshot("s2")) == tuple(_started_unknown(s) for s in before)
    assert len(d.entries("record")) == records


@pytest.mark.clause("D-8")
def test_recovery_is_a_pure_fold_and_a_second_restart_changes_nothing() -> None:
    d = ready()
    d.ask("tool", "c1")
    assert d.poll("w1") is not None
    d.ask("tool", "c2")
    journal = list(d.journal)
    first, second = reference(d.config), reference(d.config)
    assert first.recover(journal, 9.0) == second.recover(journal, 9.0)
    assert first.snapshot("s1") == second.snapshot("s1")
    d.restart()
    snapshot = d.snapshot()
    again = d.restart()
    assert d.snapshot() == snapshot
    assert not any(isinstance(c, Persist) for c in again)


@pytest.mark.clause("D-8", "TC-REC-1")
@pytest.mark.parametrize(("cut_after", "status"), [
    ("ask", ToolCallStatus.RUNNING),
    ("approval", ToolCallStatus.RUNNING),
    ("ended", ToolCallStatus.SUCCEEDED),
])
def test_a_crash_between_two_entries_of_one_step_is_completed_on_recover(
    cut_after: str, status: ToolCallStatus,
) -> None:
    d = ready(requires_approval=cut_after == "approval")
    key = d.ask("tool")
    if cut_after == "approval":
        d.answer(key, True)
    if cut_after == "ended":
        d.run("w1")
    last = max(i for i, e in enumerate(d.journal) if e["type"] == cut_after)
    del d.journal[last + 1:]
    d.restart()
    assert d.view(key).status is status
    if status is ToolCallStatus.RUNNING:
        assert d.pending(TimerKind.QUEUE_TIMEOUT, f"{key}#1")
    else:
        assert len(d.entries("record")) == 1
        assert d.snapshot().messages[-1].tool_output == "done"


def _corrupt(journal: list[dict[str, JSON]], index: int, field: str,
             value: JSON) -> list[dict[str, JSON]]:
    broken = copy.deepcopy(journal)
    if value == "<drop>":
        del broken[index][field]
    else:
        broken[index][field] = value
    return broken


def _index(journal: list[dict[str, JSON]], kind: str) -> int:
    return next(i for i, e in enumerate(journal) if e["type"] == kind)


@pytest.mark.clause("D-8")
@pytest.mark.parametrize(("kind", "field", "value", "problem"), [
    ("ask", "key", "<drop>", "missing field 'key'"),
    ("ask", "key", "s1/t1/other", "is not the key of its call"),
    ("ask", "effect", "writes", "unknown effect class"),
    ("ask", "turn_id", "t/1", "contains '/'"),
    ("ask", "at", "yesterday", "finite number"),
    ("policy", "requires_approval", "yes", "true, false or null"),
    ("record", "key", "s1/t1/ghost", "no call with key"),
    ("queued", "number", 2, "is not attempt 2"),
    ("handed", "attempt", "s1/t1/c1#9", "is not attempt 1"),
    ("ended", "end", "not_reached", "cannot end not_reached"),
    ("ended", "end", "exploded", "not one of"),
    ("record", "failure", "tool_error", "exactly when the record is failed"),
    ("record", "type", "recrod", "unknown type"),
])
def test_a_malformed_entry_is_refused_naming_the_entry_and_the_problem(
    kind: str, field: str, value: JSON, problem: str,
) -> None:
    d = ready()
    d.ask("tool")
    d.run("w1")
    index = _index(d.journal, kind)
    broken = _corrupt(d.journal, index, field, value)
    with pytest.raises(SpecError) as raised:
        reference(d.config).recover(broken, 1.0)
    message = str(raised.value)
    assert message.startswith(f"journal entry {index}")
    assert problem in message
    assert "\n" not in message


@pytest.mark.clause("D-8")
@pytest.mark.parametrize(("journal", "problem"), [
    ([42], "journal entry 0: must be a JSON object"),
    ([{"at": 0}], "journal entry 0: unknown type None"),
    ([{"type": "user_message", "at": 0, "session_id": "s9", "text": "hi"}],
     "journal entry 0: session 's9' was never opened"),
])
def test_entries_that_are_not_facts_are_refused(journal: list[object], problem: str) -> None:
    with pytest.raises(SpecError, match=problem):
        reference(ExecutorConfig()).recover(journal, 0.0)  # type: ignore[arg-type]


@pytest.mark.clause("D-8")
def test_recover_needs_a_fresh_executor() -> None:
    d = ready()
    d.ask("tool")
    with pytest.raises(SpecError, match="fresh executor"):
        d.executor.recover(list(d.journal), 1.0)
