"""How the chaos harness places what it saw in one history: the moment a run ended, from every
witness of its end; a snapshot's in-progress and final sightings; replays of a re-subscribed
event stream; the accepted answers at the server's moment; a restart between two lives."""

from __future__ import annotations

import pytest

from atmostonce.chaos.build import build_history, run_end
from atmostonce.chaos.nemesis import Fault, FaultLog
from atmostonce.chaos.observations import AnswerSeen, EventSeen, Observations, SnapshotSeen
from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import RunEndSeen, ServerLog
from atmostonce.runtime.ledger_client import LedgerRun
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallStatus, ToolCallView

LEASE = 1.0


def run(started: float, ended: float | None = None, end: str | None = None) -> LedgerRun:
    return LedgerRun("w1-1", "s/t/c#1", "s/t/c", "cancel_order", started, ended, end, None)


@pytest.mark.clause("TC-REC-SUCC")
def test_a_run_ends_when_its_result_reached_the_server_if_the_ledger_heard_later() -> None:
    seen = [RunEndSeen(10.5, "w1-1", "s/t/c#1", True)]
    assert run_end(run(10.0, 10.7, "returned"), seen, None, (), LEASE) == (
        10.5, h.RunEnd.RETURNED)
    assert run_end(run(10.0), seen, None, (), LEASE) == (10.5, h.RunEnd.RETURNED)


@pytest.mark.clause("TC-REC-LOST", "D-12")
def test_a_killed_run_ends_at_the_kill_and_a_paused_one_by_its_lease() -> None:
    assert run_end(run(10.0), (), 12.0, (), LEASE) == (12.0, h.RunEnd.KILLED)
    assert run_end(run(10.0), (), None, (), LEASE) is None
    paused_long = [(11.0, 14.0)]
    assert run_end(run(10.0, 14.01, "stopped"), (), None, paused_long, LEASE) == (
        12.0, h.RunEnd.STOPPED)
    assert run_end(run(10.0), (), 13.0, paused_long, LEASE) == (12.0, h.RunEnd.KILLED)
    paused_short = [(11.0, 11.5)]
    assert run_end(run(10.0, 13.0, "returned"), (), None, paused_short, LEASE) == (
        13.0, h.RunEnd.RETURNED)


@pytest.mark.clause("TC-REC-LOST", "D-12")
def test_a_paused_run_ends_by_its_lease_only_where_pauses_stop_runs() -> None:
    """A run paused past the lease, woken, then killed: on an engine without a lease
    (`Limits.pauses_stop_runs` false) nothing stopped it while paused, so it ends at the kill."""
    faults = FaultLog([Fault("pause", 11.0, 14.0, "w1", ("w1-1",)),
                       Fault("kill", 16.0, None, "w1", ("w1-1",))])
    ledger = [run(10.0)]

    def end_of(pauses_stop_runs: bool) -> tuple[float, h.RunEnd]:
        entries = build_history(Observations(), faults, ServerLog(), ledger, [],
                                ExecutorConfig(lease=LEASE), 20.0, pauses_stop_runs)
        [ended] = [e for e in entries if isinstance(e, h.RunEnded)]
        return ended.at, ended.end

    assert end_of(True) == (11.0 + LEASE, h.RunEnd.KILLED)
    assert end_of(False) == (16.0, h.RunEnd.KILLED)


@pytest.mark.clause("TC-REC-1", "D-8", "D-7", "TC-RCN-FIND")
def test_client_sightings_stand_at_moments_true_for_them() -> None:
    obs = Observations()
    obs.entries.append(h.CallAsked(1.0, "s/t/c", "s", "t", "c", "refund", "{}"))
    running = ToolCallView("t", "c", "refund", ToolCallStatus.RUNNING, "", "s/t/c")
    done = ToolCallView("t", "c", "refund", ToolCallStatus.SUCCEEDED, "", "s/t/c")
    obs.snapshots += [SnapshotSeen(0.5, 2.0, "s", (running,)), SnapshotSeen(3.0, 4.0, "s",
                                                                              (done,))]
    obs.events += [EventSeen(3.5, "s/t/c", ToolCallStatus.SUCCEEDED, "", ("s", 1), 0.2),
                   EventSeen(6.5, "s/t/c", ToolCallStatus.SUCCEEDED, "", ("s", 2), 6.0)]
    obs.answers += [AnswerSeen(1.2, 1.6, "s/t/c", True, True, "accepted"),
                    AnswerSeen(1.7, 1.9, "s/t/c", True, False, "already approved")]
    log = ServerLog(entries=[h.ApprovalAnswered(1.4, "s/t/c", True, True, "accepted")],
                    durable=[1.0, 1.4, 2.5])
    faults = FaultLog(restarts=[5.0])
    entries = build_history(obs, faults, log, [], [], ExecutorConfig(), 10.0)
    kinds = [(type(e).__name__, e.at) for e in entries]
    assert kinds == [
        ("CallAsked", 1.0),
        ("SnapshotSeen", 1.0 + 1e-6),
        ("ApprovalAnswered", 1.4),
        ("ApprovalAnswered", 1.9),
        ("RecordPublished", 3.5),
        ("SnapshotSeen", 4.0),
        ("ServerRestarted", 5.0),
    ]
    restarted = entries[-1]
    assert isinstance(restarted, h.ServerRestarted)
    assert restarted.journal_entries == 3


@pytest.mark.clause("TC-AMO-1")
def test_a_finding_of_a_property_the_engine_cannot_show_is_set_aside_and_counted() -> None:
    """A run the ledger saw whose hand-out the engine's history lacks (Temporal keeps only a
    call's last attempt start): A-ONE-WORKER's finding is no evidence on an engine that
    declares it not checkable, and is set aside with a note; elsewhere it stands."""
    from atmostonce.chaos.judge import judge
    from atmostonce.engines.adapter import Limits
    from atmostonce.spec.properties import PropertyId

    obs = Observations()
    obs.entries.append(h.CallAsked(1.0, "s/t/c", "s", "t", "c", "cancel_order", "{}"))
    ledger = [run(2.0, 2.5, "returned")]

    def judged(limits: Limits) -> tuple[list[str], list[str]]:
        found = judge(obs, FaultLog(), ServerLog(), ledger, [], ExecutorConfig(lease=LEASE),
                      limits, 10.0, quiescent=False)
        return [v.property for v in found.violations], found.notes()

    kept, _ = judged(Limits())
    assert PropertyId.A_ONE_WORKER in kept
    blind, notes = judged(Limits({PropertyId.A_ONE_WORKER: "only the last start is kept"}))
    assert PropertyId.A_ONE_WORKER not in blind
    assert [n for n in notes if n.startswith("1 finding(s) of A-ONE-WORKER set aside")] != []


@pytest.mark.clause("TC-AMO-3", "D-12")
def test_a_run_whose_worker_went_unheard_ends_a_lease_after_its_last_renewal() -> None:
    """A worker starved of the CPU heartbeats no more and cannot fence itself in time; it is
    declared lost and its single-attempt call recorded outcome_unknown while nothing has yet
    seen its run end. Where the server log holds every renewal of the lease
    (`Limits.renewals_logged`), the ledger refuses the run's writes a lease after the last one,
    so the run ends then, before the record; elsewhere it is a run going on after its record."""
    from atmostonce.chaos.judge import judge
    from atmostonce.engines.adapter import Limits
    from atmostonce.spec.properties import PropertyId

    config = ExecutorConfig(lease=LEASE, heartbeat_timeout=2.5)
    obs = Observations()
    obs.entries.append(h.CallAsked(1.0, "s/t/c", "s", "t", "c", "cancel_order", "{}"))
    obs.events.append(EventSeen(4.5, "s/t/c", ToolCallStatus.OUTCOME_UNKNOWN,
                                "outcome unknown: the worker was lost", ("s", 1), 0.5))
    log = ServerLog(entries=[
        h.HandedOut(1.1, "w1-1", "s/t/c#1", "s/t/c", "cancel_order", True, "s/t/c"),
        h.StartDelivered(1.15, "w1-1", "s/t/c#1"),
        h.HeartbeatDelivered(1.4, "w1-1", "s/t/c#1"),
        h.HeartbeatDelivered(1.65, "w1-1", "s/t/c#1"),
        h.WorkerDeclaredLost(4.15, "w1-1"),
    ])
    ledger = [run(1.2)]

    def found(renewals_logged: bool) -> tuple[list[str], list[float]]:
        judged = judge(obs, FaultLog(), log, ledger, [], config,
                       Limits(renewals_logged=renewals_logged), 10.0, quiescent=False)
        ends = [e.at for e in judged.entries if isinstance(e, h.RunEnded)]
        return [v.property for v in judged.violations], ends

    violations, ends = found(True)
    assert ends == [1.65 + LEASE]
    assert PropertyId.A_DOUBLE_RUN_SHAPE not in violations
    violations, ends = found(False)
    assert ends == []
    assert PropertyId.A_DOUBLE_RUN_SHAPE in violations
