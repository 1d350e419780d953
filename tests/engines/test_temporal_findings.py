"""What the Temporal mapping does in the page's hard cases, each on the real dev server, real
worker processes, real SIGKILL, with the effect ledger as the ground truth. Each test is one row
of `docs/engines.md`; the test's name says what holds on Temporal.

    pytest tests/engines/test_temporal_findings.py -p no:cacheprovider -q
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("temporalio")

from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import CutMode, ServerLog
from atmostonce.engines.temporal import NO_LEASE, mapping
from atmostonce.engines.temporal.server_log import UNKNOWN_WORKER
from atmostonce.runtime.ledger_client import LedgerRun
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import (
    DID_NOT_RUN_PREFIX,
    OUTCOME_UNKNOWN_ERROR,
    RejectReason,
    reject_text,
)
from atmostonce.spec.session import ToolCallStatus
from tests.engines.temporal_world import World, record, temporal_world, until

pytestmark = pytest.mark.slow

CONFIG = ExecutorConfig(max_attempts=3, retry_backoff=0.2, queue_timeout=10.0, run_timeout=3.0,
                        heartbeat_timeout=2.5, lease=1.0, approval_deadline=30.0)
NO_APPROVAL = {
    "cancel_order": ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False),
    "refund": ToolPolicy(EffectClass.IDEMPOTENT_WRITE, requires_approval=False),
    "lookup_order": ToolPolicy(EffectClass.READ),
}


def args(duration: float, write_at: float) -> str:
    return json.dumps({"order_id": "1002", "duration": duration, "write_at": write_at})


async def start(world: World, session_id: str, policies: bool = True) -> None:
    if policies:
        for tool, policy in NO_APPROVAL.items():
            await world.api.set_policy(tool, policy)
    await world.api.open_session(session_id)


def worker_running(world: World, name: str) -> object:
    return next(w for w in world.engine.workers() if name in w.names)


@pytest.mark.clause("TC-AMO-3", "TC-AMO-4", "D-4")
def test_a_single_attempt_tool_timed_out_while_it_runs_records_unknown_and_runs_on(
        tmp_path: Path) -> None:
    """Start-to-close fires while a non-idempotent write runs: the call records outcome_unknown
    (D-4, as Dex records it) saying the tool may still be running (never "did not run"),
    Temporal does not stop the tool,
    and a second call of the tool runs while the first is still going: the page's one
    documented double run, with two different keys. The chaos checkers, given what the client
    saw, the server log and the ledger, report it as a double run of the documented shape
    (S-DOUBLE-RUN), and judge that shape: without the server log's note that the engine gave up
    on the first run, the same overlap breaks A-DOUBLE-RUN-SHAPE."""
    async def scenario(world: World) -> tuple[str, str]:
        await world.observed.set_policies(NO_APPROVAL)
        await world.observed.open_session("amo")
        first = await world.observed.ask("amo", "t1", "c1", "cancel_order", args(3.5, 2.5))
        event = await record(world, "amo", "c1")
        recorded = time.monotonic()
        assert event.status is ToolCallStatus.OUTCOME_UNKNOWN, event
        assert "may still be running" in event.error
        assert DID_NOT_RUN_PREFIX not in event.error
        second = await world.observed.ask("amo", "t2", "c2", "cancel_order", args(0.3, 0.1))
        assert (await record(world, "amo", "c2")).status is ToolCallStatus.SUCCEEDED
        runs = await until("the first run ended", lambda: [
            r for r in world.runs(first) if r.ended is not None])
        [again] = world.runs(second)
        assert runs[0].end == "returned"
        assert runs[0].ended is not None
        assert runs[0].ended > recorded, "the timed-out run ended before its record"
        assert runs[0].ended > again.started, "no overlap"
        late = [w for w in world.writes(first) if w.applied]
        assert len(late) == 1
        assert late[0].at > recorded
        assert [w.applied for w in world.writes(second)] == [True]
        await world.observed.reconcile("amo")  # the page's steps find the unknown call
        return first, second

    with temporal_world(tmp_path, replace(CONFIG, run_timeout=1.5), workers=2) as world:
        first, second = asyncio.run(scenario(world))
        judged = world.judged()
        unjudged = world.engine.limits().not_checkable
        history = judged.history
        assert [v.line() for v in history.violations] == []
        [double] = history.checker.double_runs
        assert (double.tool, double.first, double.second) == ("cancel_order", first, second)
        assert double.documented
        assert PropertyId.S_DOUBLE_RUN in history.checker.witnessed
        assert PropertyId.A_DOUBLE_RUN_SHAPE not in unjudged

        def no_give_up(log: ServerLog) -> ServerLog:
            log.entries = [e for e in log.entries if not isinstance(e, h.Cancelled)]
            return log

        blind = world.judged(no_give_up).history
        assert PropertyId.A_DOUBLE_RUN_SHAPE in {v.property for v in blind.violations}, [
            v.line() for v in blind.violations]
        [undocumented] = blind.checker.double_runs
        assert not undocumented.documented


@pytest.mark.clause("TC-REC-RETRY", "TC-REC-LOST", "TC-KEY-1", "TC-KEY-3", "TC-EFF-IDEM")
def test_a_retried_write_after_a_worker_kill_runs_again_with_the_same_key(
        tmp_path: Path) -> None:
    """SIGKILL the worker of an idempotent write after its write: Temporal's heartbeat timeout
    retries it on the other worker with the same key, the keyed service drops the repeat, and
    the call records succeeded."""
    async def scenario(world: World) -> None:
        await start(world, "retry")
        key = await world.api.ask("retry", "t1", "c1", "refund", args(1.5, 0.1))
        await until("the write applied", lambda: world.writes(key))
        [run] = world.runs(key)
        world.engine.kill_worker(worker_running(world, run.worker))  # type: ignore[arg-type]
        event = await record(world, "retry", "c1")
        assert event.status is ToolCallStatus.SUCCEEDED, event
        runs = world.runs(key)
        assert [r.attempt for r in runs] == [f"{key}#1", f"{key}#2"]
        assert runs[0].worker != runs[1].worker
        assert {r.key for r in runs} == {key}
        assert [w.applied for w in world.writes(key)] == [True, False]

    with temporal_world(tmp_path, CONFIG, workers=2) as world:
        asyncio.run(scenario(world))


@pytest.mark.clause("TC-REC-UNK", "TC-REC-LOST", "TC-REC-EXHAUST-OTHER", "D-5")
def test_an_earlier_attempt_known_only_from_the_closing_failure_counts_as_reached(
        tmp_path: Path) -> None:
    """A retried write's first attempt is lost with its worker (SIGKILL mid-run) and its second
    is never taken (no worker polls within the queue timeout): Temporal closes the activity with
    a schedule-to-start timeout whose cause is the first attempt's heartbeat timeout, and the
    call records outcome_unknown. The history holds no STARTED event for the first attempt;
    without its worker's note and its run too (what a worker killed between getting the task
    and writing the note leaves), the server log still enters the hand-out from that cause, so
    A-UNKNOWN-REACHED judges the record held; the server log that ignores causes reports it as
    a lie, as the 5-minute chaos run once did for a call of `refund`."""
    async def scenario(world: World) -> str:
        await world.observed.set_policies(NO_APPROVAL)
        await world.observed.open_session("lost")
        key = await world.observed.ask("lost", "t1", "c1", "refund", args(20.0, 19.0))
        [run] = await until("the run started", lambda: world.runs(key))
        world.engine.kill_worker(worker_running(world, run.worker))  # type: ignore[arg-type]
        event = await record(world, "lost", "c1")
        assert event.status is ToolCallStatus.OUTCOME_UNKNOWN, event
        assert [r.attempt for r in world.runs(key)] == [f"{key}#1"]
        assert world.writes(key) == []
        await world.observed.reconcile("lost")
        return key

    config = replace(CONFIG, queue_timeout=3.0)
    with temporal_world(tmp_path, config, workers=1) as world:
        key = asyncio.run(scenario(world))
        world.engine.close()
        for events in world.engine.setup.workdir.glob("*.events"):
            events.write_text("")
        def before_the_note(run: LedgerRun) -> bool:
            return run.key != key

        judged = world.judged(ran=before_the_note).history
        assert [v.line() for v in judged.violations] == []
        earlier = [e for e in judged.entries if isinstance(e, h.HandedOut) and e.key == key]
        assert [(e.attempt, e.worker) for e in earlier] == [(f"{key}#earlier",
                                                             UNKNOWN_WORKER)]

        def causes_ignored(log: ServerLog) -> ServerLog:
            log.entries = [e for e in log.entries
                           if not (isinstance(e, h.HandedOut) and e.worker == UNKNOWN_WORKER)]
            return log

        blind = world.judged(causes_ignored, before_the_note).history
        assert PropertyId.A_UNKNOWN_REACHED in {v.property for v in blind.violations}


@pytest.mark.clause("TC-REC-UNK", "TC-REC-LOST", "D-8", "TC-RCN-ASK")
def test_a_server_kill_longer_than_the_activity_records_the_truth(tmp_path: Path) -> None:
    """SIGKILL the dev server while a single-attempt write runs, and keep it down longer than
    the run and the heartbeat timeout: the tool takes effect meanwhile. After the restart the
    call records either succeeded (the worker's completion got through) or outcome_unknown
    (the heartbeat timeout fired first), never failed or "did not run"; outcome_unknown here is
    a call whose effect happened, which reconcile finds in the ledger."""
    async def scenario(world: World) -> str:
        await start(world, "down")
        key = await world.api.ask("down", "t1", "c1", "cancel_order", args(0.6, 0.1))
        await until("the run started", lambda: world.runs(key))
        world.engine.kill_server()
        killed = time.monotonic()
        await until("the run ended", lambda: all(r.ended for r in world.runs(key)))
        await until("down past the heartbeat timeout",
                    lambda: time.monotonic() > killed + CONFIG.heartbeat_timeout + 1.0)
        world.engine.start_server()
        event = await record(world, "down", "c1")
        assert event.status in (ToolCallStatus.SUCCEEDED, ToolCallStatus.OUTCOME_UNKNOWN), event
        if event.status is ToolCallStatus.OUTCOME_UNKNOWN:
            assert event.error.startswith(OUTCOME_UNKNOWN_ERROR)
        assert [w.applied for w in world.writes(key)] == [True]
        assert len(world.runs(key)) == 1, "the write ran again"
        return str(event.status.value)

    with temporal_world(tmp_path, CONFIG, workers=1) as world:
        seen = asyncio.run(scenario(world))
    print(f"record after the restart: {seen}")


@pytest.mark.clause("TC-REC-REJ", "D-7", "D-8")
def test_an_approval_deadline_passes_across_a_server_restart(tmp_path: Path) -> None:
    """A call waits for approval; the server is killed and stays down past the deadline. The
    workflow's deadline timer is durable: after the restart it fires, the call records
    rejected (deadline), the tool never runs, and a late approval gets D-7's deadline-passed
    reply."""
    async def scenario(world: World) -> None:
        await start(world, "deadline", policies=False)
        key = await world.api.ask("deadline", "t1", "c1", "cancel_order", args(0.1, 0.0))
        asked = time.monotonic()
        world.engine.kill_server()
        await until("down past the deadline", lambda: time.monotonic()
                    > asked + config.approval_deadline + 1.0)
        world.engine.start_server()
        event = await record(world, "deadline", "c1")
        assert event.status is ToolCallStatus.REJECTED, event
        assert event.error == reject_text(RejectReason.DEADLINE)
        reply = await until("an answer", lambda: _answer(world, key))
        assert not reply[0]
        assert "deadline" in reply[1]
        assert world.runs(key) == []

    config = replace(CONFIG, approval_deadline=3.0)
    with temporal_world(tmp_path, config, workers=1) as world:
        asyncio.run(scenario(world))


async def _answer(world: World, key: str) -> tuple[bool, str] | None:
    from atmostonce.runtime.client import ServerUnavailable

    try:
        reply = await world.api.approve(key)
    except ServerUnavailable:
        return None
    return reply.accepted, reply.text


@pytest.mark.clause("TC-REC-NOTRUN", "TC-REC-FAIL", "D-5")
def test_an_attempt_no_worker_took_records_did_not_run_and_is_not_retried(
        tmp_path: Path) -> None:
    """No tool worker polls: the read's schedule-to-start timeout fires with no STARTED event,
    so the call records failed with the did-not-run wording, and the ledger shows no run.
    Temporal never retries a schedule-to-start timeout, so CallTool's other attempts are never
    made (the spec would retry an attempt that never reached a worker)."""
    async def scenario(world: World) -> None:
        await start(world, "idle")
        key = await world.api.ask("idle", "t1", "c1", "lookup_order", args(0.1, 0.0))
        event = await record(world, "idle", "c1")
        assert event.status is ToolCallStatus.FAILED, event
        assert event.error.startswith(DID_NOT_RUN_PREFIX)
        assert world.runs(key) == []

    with temporal_world(tmp_path, replace(CONFIG, queue_timeout=2.0), workers=0) as world:
        asyncio.run(scenario(world))


@pytest.mark.clause("D-12", "TC-AMO-2", "TC-REC-LOST")
@pytest.mark.parametrize("variant", [mapping.PAGE, NO_LEASE], ids=["lease", "no-lease"])
def test_a_cut_off_worker_stops_its_run_before_the_record_only_with_the_lease(
        tmp_path: Path, variant: mapping.Variant) -> None:
    """Hold a worker's connection while a single-attempt write runs: after the heartbeat
    timeout the call records outcome_unknown. With the mapping's lease the worker stopped the
    run a second after it was cut, before the record, and the write never happened; without
    it (what Temporal gives by itself) the run goes on after the record and takes effect:
    a write after outcome_unknown, the shape A-DOUBLE-RUN-SHAPE forbids."""
    async def scenario(world: World) -> None:
        await start(world, "cut")
        key = await world.api.ask("cut", "t1", "c1", "cancel_order", args(5.0, 4.0))
        [run] = await until("the run started", lambda: world.runs(key))
        worker = worker_running(world, run.worker)
        world.engine.cut(worker, CutMode.HOLD)  # type: ignore[arg-type]
        event = await record(world, "cut", "c1")
        recorded = time.monotonic()
        assert event.status is ToolCallStatus.OUTCOME_UNKNOWN, event
        [run] = await until("the run ended", lambda: [
            r for r in world.runs(key) if r.ended is not None])
        world.engine.heal(worker)  # type: ignore[arg-type]
        assert run.ended is not None
        if variant.lease:
            assert run.end == "stopped"
            assert run.ended < recorded
            assert world.writes(key) == []
        else:
            assert run.end == "returned"
            assert run.ended > recorded
            assert [w.applied for w in world.writes(key)] == [True]

    with temporal_world(tmp_path, CONFIG, workers=1, variant=variant) as world:
        asyncio.run(scenario(world))


@pytest.mark.clause("D-12", "D-5", "TC-RCN-1", "TC-AMO-2")
@pytest.mark.parametrize("variant", [mapping.PAGE, NO_LEASE], ids=["lease", "no-lease"])
def test_a_task_held_past_the_heartbeat_timeout_never_runs_only_with_the_lease(
        tmp_path: Path, variant: mapping.Variant) -> None:
    """Hold an idle worker's connection, then ask: Temporal hands the task to the worker's
    waiting poll (it records the start) but the answer is held, so after the heartbeat
    timeout the call records outcome_unknown. When the connection heals the task arrives.
    With the lease, counted from the start Temporal recorded, the worker refuses it and the
    tool never runs; without it the tool runs after its call was recorded outcome_unknown
    (A-NO-ATTEMPT-AFTER-UNKNOWN), the finding that chaos made first."""
    async def scenario(world: World) -> None:
        await start(world, "late")
        [worker] = world.engine.workers()
        world.engine.cut(worker, CutMode.HOLD)
        key = await world.api.ask("late", "t1", "c1", "cancel_order", args(0.3, 0.1))
        event = await record(world, "late", "c1")
        assert event.status is ToolCallStatus.OUTCOME_UNKNOWN, event
        recorded = time.monotonic()
        world.engine.heal(worker)
        notes = world.engine.setup.workdir / f"{worker.id}.events"
        await until("the task reached the worker", lambda: notes.exists()
                    and '"started"' in notes.read_text())
        if variant.lease:
            await until("the worker refused it", lambda: '"refused"' in notes.read_text())
            assert world.runs(key) == []
        else:
            [run] = await until("the tool ran", lambda: world.runs(key))
            assert run.started > recorded

    with temporal_world(tmp_path, CONFIG, workers=1, variant=variant) as world:
        asyncio.run(scenario(world))
