"""Which record a call gets: retries only for reads and idempotent writes, exhaustion per class,
the did-not-run wording only when no attempt was handed out, cancellation, lost workers, and
records that never change."""

from __future__ import annotations

import pytest

from atmostonce.spec.policy import EffectClass, retries_allowed
from atmostonce.spec.protocol import (
    Cancel,
    DropWorker,
    ExecutorConfig,
    GoAhead,
    Persist,
    Publish,
    TimerKind,
)
from atmostonce.spec.records import (
    DID_NOT_RUN_PREFIX,
    OUTCOME_UNKNOWN_ERROR,
    AttemptProgress,
    FailureKind,
    failure_text,
)
from atmostonce.spec.session import ToolCallStatus
from tests.executor.driver import Driver

READ = EffectClass.READ
IDEM = EffectClass.IDEMPOTENT_WRITE
NONIDEM = EffectClass.NON_IDEMPOTENT_WRITE
UNCL = EffectClass.UNCLASSIFIED
SINGLE = (NONIDEM, UNCL)


def ready(effect: EffectClass, max_attempts: int = 2, fence: bool = False,
          cancel_records_failed: bool = False) -> Driver:
    d = Driver(ExecutorConfig(max_attempts=max_attempts, fence=fence,
                              cancel_records_failed=cancel_records_failed))
    d.open()
    d.policy("tool", effect, requires_approval=False)
    return d


def handed(d: Driver, worker: str) -> GoAhead:
    go = d.poll(worker)
    assert go is not None
    return go


def lose(d: Driver, worker: str) -> None:
    assert DropWorker(worker) in d.fire(TimerKind.HEARTBEAT_TIMEOUT, worker)


@pytest.mark.clause("TC-REC-SUCC", "TC-REC-2")
def test_a_returned_result_records_succeeded_and_reaches_the_model() -> None:
    d = ready(NONIDEM)
    key = d.ask("tool")
    d.run("w1", ok=True, output="order 1002 cancelled")
    assert d.view(key).status is ToolCallStatus.SUCCEEDED
    assert d.snapshot().messages[-1].tool_output == "order 1002 cancelled"


@pytest.mark.clause("D-3", "TC-REC-FAIL", "TC-REC-2")
@pytest.mark.parametrize("effect", list(EffectClass), ids=lambda e: e.value)
def test_a_failure_the_tool_reports_is_final_and_goes_to_the_model(effect: EffectClass) -> None:
    d = ready(effect)
    key = d.ask("tool")
    d.run("w1", ok=False, output="card declined")
    view = d.view(key)
    assert view.status is ToolCallStatus.FAILED
    assert view.error == failure_text(FailureKind.TOOL_ERROR, "card declined")
    assert "card declined" in d.snapshot().messages[-1].tool_output
    assert len(d.entries("queued")) == 1


@pytest.mark.clause("TC-POL-2", "TC-REC-RETRY", "TC-REC-LOST", "TC-EFF-READ", "TC-EFF-IDEM",
                    "TC-EFF-NONIDEM", "TC-EFF-UNCL", "TC-AMO-2")
@pytest.mark.parametrize("effect", list(EffectClass), ids=lambda e: e.value)
def test_only_reads_and_idempotent_writes_get_another_attempt(effect: EffectClass) -> None:
    d = ready(effect)
    key = d.ask("tool")
    handed(d, "w1")
    lose(d, "w1")
    if retries_allowed(effect):
        assert d.pending(TimerKind.RETRY_BACKOFF, key)
        assert d.view(key).status is ToolCallStatus.RUNNING
        d.fire(TimerKind.RETRY_BACKOFF, key)
        assert handed(d, "w2").attempt == f"{key}#2"
    else:
        assert d.view(key).status is ToolCallStatus.OUTCOME_UNKNOWN
        assert d.view(key).error == (f"{OUTCOME_UNKNOWN_ERROR}: its worker stopped or lost "
                                     "its connection (attempt progress NOT_COMPLETED)")
        assert d.poll("w2") is None
        assert len(d.entries("queued")) == 1


@pytest.mark.clause("TC-REC-EXHAUST-READ", "TC-REC-EXHAUST-OTHER", "D-9")
@pytest.mark.parametrize(("effect", "status"), [
    (READ, ToolCallStatus.FAILED), (IDEM, ToolCallStatus.OUTCOME_UNKNOWN),
    (NONIDEM, ToolCallStatus.OUTCOME_UNKNOWN), (UNCL, ToolCallStatus.OUTCOME_UNKNOWN),
], ids=lambda x: getattr(x, "value", ""))
def test_out_of_attempts_after_a_reach_records_by_class(
    effect: EffectClass, status: ToolCallStatus,
) -> None:
    d = ready(effect, max_attempts=3)
    key = d.ask("tool")
    for n in range(1, 4):
        handed(d, f"w{n}")
        lose(d, f"w{n}")
        if d.view(key).status is not ToolCallStatus.RUNNING:
            break
        d.fire(TimerKind.RETRY_BACKOFF, key)
    view = d.view(key)
    assert view.status is status
    assert len(d.entries("queued")) == (3 if retries_allowed(effect) else 1)
    if status is ToolCallStatus.FAILED:
        assert view.error == failure_text(FailureKind.MAY_HAVE_RUN)


@pytest.mark.clause("TC-REC-NOTRUN", "D-10", "D-5")
@pytest.mark.parametrize("effect", list(EffectClass), ids=lambda e: e.value)
def test_did_not_run_when_no_attempt_was_ever_handed_out(effect: EffectClass) -> None:
    d = ready(effect)
    key = d.ask("tool")
    for _ in range(2):
        d.fire(TimerKind.QUEUE_TIMEOUT, f"{key}#{len(d.entries('queued'))}")
        if d.view(key).status is not ToolCallStatus.RUNNING:
            break
        d.fire(TimerKind.RETRY_BACKOFF, key)
    view = d.view(key)
    assert view.status is ToolCallStatus.FAILED
    assert view.error.startswith(DID_NOT_RUN_PREFIX)
    assert len(d.entries("queued")) == (2 if retries_allowed(effect) else 1)


@pytest.mark.clause("TC-REC-NOTRUN", "D-5", "TC-REC-EXHAUST-READ")
@pytest.mark.parametrize("effect", [READ, IDEM], ids=lambda e: e.value)
def test_never_did_not_run_once_an_attempt_was_handed_out(effect: EffectClass) -> None:
    d = ready(effect)
    key = d.ask("tool")
    handed(d, "w1")
    lose(d, "w1")
    d.fire(TimerKind.RETRY_BACKOFF, key)
    d.fire(TimerKind.QUEUE_TIMEOUT, f"{key}#2")
    view = d.view(key)
    assert not view.error.startswith(DID_NOT_RUN_PREFIX)
    expected = ToolCallStatus.FAILED if effect is READ else ToolCallStatus.OUTCOME_UNKNOWN
    assert view.status is expected


@pytest.mark.clause("TC-REC-LOST", "TC-AMO-2")
@pytest.mark.parametrize("started", [False, True], ids=["before-started", "after-started"])
def test_a_worker_lost_after_the_hand_out_may_have_run_the_tool(started: bool) -> None:
    d = ready(NONIDEM)
    key = d.ask("tool")
    go = handed(d, "w1")
    if started:
        d.start("w1", go.attempt)
    lose(d, "w1")
    assert d.view(key).status is ToolCallStatus.OUTCOME_UNKNOWN
    assert not d.pending(TimerKind.RUN_TIMEOUT, go.attempt)


@pytest.mark.clause("D-4", "TC-AMO-3", "TC-REC-EXHAUST-OTHER")
@pytest.mark.parametrize("effect", SINGLE, ids=lambda e: e.value)
def test_a_timed_out_single_attempt_is_cancelled_and_records_outcome_unknown(
    effect: EffectClass,
) -> None:
    """D-4 as Dex has it: the cancelled write's outcome is unknown, its error says the tool may
    still be running and names the attempt's progress, and its run keeps the fence closed."""
    d = ready(effect, fence=True)
    key = d.ask("tool", "c1")
    go = handed(d, "w1")
    d.start("w1", go.attempt)
    commands = d.fire(TimerKind.RUN_TIMEOUT, go.attempt)
    assert Cancel("w1", go.attempt) in commands
    view = d.view(key)
    assert view.status is ToolCallStatus.OUTCOME_UNKNOWN
    assert view.error == (f"{OUTCOME_UNKNOWN_ERROR}: it was cancelled or timed out, and the "
                          "tool may still be running (attempt progress NOT_COMPLETED)")
    assert view.attempts[0].progress is AttemptProgress.NOT_COMPLETED
    (ended,) = d.entries("ended")
    assert (ended["end"], ended["may_still_run"]) == ("cancelled", True)
    d.ask("tool", "c2")
    assert d.poll("w2") is None, "the abandoned run keeps the fence closed"


@pytest.mark.clause("D-4", "F-7", "TC-AMO-3", "TC-REC-FAIL")
@pytest.mark.parametrize("effect", SINGLE, ids=lambda e: e.value)
def test_under_the_failed_choice_a_timed_out_single_attempt_may_still_be_running(
    effect: EffectClass,
) -> None:
    d = ready(effect, fence=True, cancel_records_failed=True)
    key = d.ask("tool", "c1")
    go = handed(d, "w1")
    d.start("w1", go.attempt)
    commands = d.fire(TimerKind.RUN_TIMEOUT, go.attempt)
    assert Cancel("w1", go.attempt) in commands
    view = d.view(key)
    assert view.status is ToolCallStatus.FAILED
    assert view.error == failure_text(FailureKind.MAY_STILL_BE_RUNNING)
    assert not view.error.startswith(DID_NOT_RUN_PREFIX)
    (ended,) = d.entries("ended")
    assert (ended["end"], ended["may_still_run"]) == ("cancelled", True)
    d.ask("tool", "c2")
    assert d.poll("w2") is None, "the abandoned run keeps the fence closed"


@pytest.mark.clause("D-9", "TC-REC-RETRY")
def test_a_timed_out_read_is_retried_and_leaves_no_abandoned_run() -> None:
    d = ready(READ, fence=True)
    key = d.ask("tool")
    go = handed(d, "w1")
    d.fire(TimerKind.RUN_TIMEOUT, go.attempt)
    (ended,) = d.entries("ended")
    assert (ended["end"], ended["may_still_run"]) == ("cancelled", False)
    d.fire(TimerKind.RETRY_BACKOFF, key)
    assert handed(d, "w2").attempt == f"{key}#2"


@pytest.mark.clause("TC-REC-1", "TC-AMO-3", "TC-RCN-1")
@pytest.mark.parametrize("how", ["cancelled", "worker-lost"])
def test_a_late_result_never_changes_the_record(how: str) -> None:
    d = ready(NONIDEM)
    key = d.ask("tool")
    go = handed(d, "w1")
    d.start("w1", go.attempt)
    if how == "cancelled":
        d.fire(TimerKind.RUN_TIMEOUT, go.attempt)
    else:
        lose(d, "w1")
        d.connect("w1")
    before = (d.view(key), len(d.entries("record")), len(d.published))
    commands = d.finish("w1", go.attempt, ok=True, output="went through after all")
    assert not any(isinstance(c, Publish) for c in commands)
    assert not any(isinstance(c, Persist) and c.entry["type"] == "record" for c in commands)
    assert (d.view(key), len(d.entries("record")), len(d.published)) == before
    assert d.poll("w1") is None


@pytest.mark.clause("TC-REC-1", "TC-RCN-FIND")
def test_each_call_is_recorded_and_published_exactly_once() -> None:
    d = ready(READ)
    keys = [d.ask("tool", f"c{i}") for i in range(3)]
    d.run("w1")
    go = handed(d, "w2")
    lose(d, "w2")
    d.fire(TimerKind.RETRY_BACKOFF, go.key)
    assert d.run("w3", ok=False).key == keys[2]
    d.fire(TimerKind.QUEUE_TIMEOUT, f"{keys[1]}#2")
    records = [e["key"] for e in d.entries("record")]
    assert records == [keys[0], keys[2], keys[1]]
    assert [e.status for e in d.published] == [
        ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED, ToolCallStatus.FAILED]
