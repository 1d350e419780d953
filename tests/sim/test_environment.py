"""The simulated world behaves as the protocol says: a cut-off worker stops its runs before it
is declared lost (D-12), each connection is FIFO, cancellation is cooperative (TC-AMO-3), a
restart loses connections and replays the journal (D-8), and services treat repeats by their
class (TC-EFF-IDEM, TC-EFF-NONIDEM)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from atmostonce.check.history import entries as h
from atmostonce.check.history.services import Service
from atmostonce.executor import reference
from atmostonce.sim.run import run_seed
from atmostonce.sim.workload import CATALOGUE


def histories(profile: str, seeds: range) -> Iterator[list[h.Entry]]:
    for seed in seeds:
        run = run_seed(seed, profile, reference, keep_history=True)
        assert run.ok
        assert run.history is not None
        yield run.history.entries


@pytest.mark.clause("D-12")
def test_a_worker_stops_its_runs_before_it_is_declared_lost() -> None:
    declared = 0
    for entries in histories("partitions", range(12)):
        live: dict[int, str] = {}
        for e in entries:
            if isinstance(e, h.RunStarted):
                live[e.run] = e.worker
            elif isinstance(e, h.RunEnded):
                live.pop(e.run, None)
            elif isinstance(e, h.WorkerDeclaredLost):
                declared += 1
                assert e.worker not in live.values(), f"{e.worker} still runs a tool"
    assert declared > 0


@pytest.mark.clause("TC-REC-LOST")
def test_messages_of_one_connection_arrive_in_order_even_across_a_partition() -> None:
    cut = 0
    for entries in histories("partitions", range(12)):
        started: set[str] = set()
        for e in entries:
            cut += isinstance(e, h.WorkerCut)
            if isinstance(e, h.StartDelivered):
                started.add(e.attempt)
            elif isinstance(e, h.ResultDelivered):
                assert e.attempt in started, "a result overtook its Started"
    assert cut > 0


@pytest.mark.clause("TC-AMO-3")
def test_a_cancelled_tool_runs_on_and_reports_later() -> None:
    ran_on = 0
    for entries in histories("timeouts", range(12)):
        cancelled: set[str] = set()
        attempt_of: dict[int, str] = {}
        for e in entries:
            if isinstance(e, h.Cancelled):
                cancelled.add(e.attempt)
            elif isinstance(e, h.RunStarted):
                attempt_of[e.run] = e.attempt
            elif (isinstance(e, h.RunEnded) and e.end is h.RunEnd.RETURNED
                  and attempt_of[e.run] in cancelled):
                ran_on += 1
    assert ran_on > 0


@pytest.mark.clause("D-8")
def test_a_restart_loses_every_connection_and_workers_come_back_fresh() -> None:
    restarts = 0
    for entries in histories("restarts", range(12)):
        connected: set[str] = set()
        gone: set[str] = set()
        for e in entries:
            if isinstance(e, h.ServerRestarted):
                restarts += 1
                gone |= connected
                connected = set()
            elif isinstance(e, h.WorkerConnected):
                assert e.worker not in gone, "a worker came back under an old connection"
                connected.add(e.worker)
            elif isinstance(e, h.HandedOut) and e.sent:
                assert e.worker in connected, "work went to a connection lost at a restart"
    assert restarts > 0


@pytest.mark.clause("TC-EFF-IDEM", "TC-KEY-3", "TC-EFF-NONIDEM")
def test_services_drop_a_repeated_key_only_when_keyed() -> None:
    services = {t.name: t.service for t in CATALOGUE}
    dropped = 0
    for entries in histories("chaos", range(12)):
        tool_of: dict[int, str] = {}
        for e in entries:
            if isinstance(e, h.RunStarted):
                tool_of[e.run] = e.tool
            elif isinstance(e, h.EffectApplied):
                service = services[tool_of[e.run]]
                assert service is not Service.NONE, "a read wrote to its service"
                if not e.applied:
                    dropped += 1
                    assert service is Service.KEYED
    assert dropped > 0


@pytest.mark.clause("TC-REC-1")
def test_a_partition_healing_behind_a_slow_link_keeps_the_connection_fifo() -> None:
    """Chaos seed 7213 once let messages held during a cut overtake older ones still on a slow
    link, so a worker's hello arrived after its poll: a read then ran after its record."""
    run = run_seed(7213, "chaos", reference, only=(0, 1, 3, 4, 5))
    assert run.ok, [v.message for v in run.violations]
