"""Self-fencing (D-12): a worker that hears nothing from the server for its lease stops its runs
by ending its process, before the server's heartbeat timeout declares it lost, so a cut-off
worker never takes effect after that; the ledger refuses a write sent after the lease."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.worker import FENCED_EXIT
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.session import ToolCallStatus
from tests.load import patience
from tests.runtime.conftest import CONFIG, eventually, finished

NONIDEM = ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False)
LATE_WRITE = {"order_id": "1", "write_at": 1.6, "duration": 3.0}


@pytest.mark.clause("D-12", "TC-AMO-2")
def test_a_worker_cut_off_from_a_paused_server_stops_before_its_write(tmp_path: Path) -> None:
    with Cluster(tmp_path, config=CONFIG, workers=1) as cluster, cluster.client() as client, \
            cluster.ledger_client() as ledger:
        client.set_policy("cancel_order", NONIDEM)
        key = client.ask("fence-server", "t1", "c1", "cancel_order", LATE_WRITE)
        run = eventually("the run started", lambda: next(iter(ledger.runs(key)), None))
        worker = cluster.worker_of(run.worker)
        assert cluster.server is not None
        cluster.pause(cluster.server)
        paused = time.monotonic()
        assert worker.wait(timeout=CONFIG.lease + 2.0 * patience()) == FENCED_EXIT
        stopped_after = time.monotonic() - paused
        cluster.resume(cluster.server)
        assert stopped_after < CONFIG.heartbeat_timeout
        assert [r.end for r in ledger.runs(key)] == ["stopped"]
        assert ledger.writes(key) == []
        assert finished(client, "fence-server", "c1").status is ToolCallStatus.OUTCOME_UNKNOWN


@pytest.mark.clause("D-12", "TC-AMO-2", "TC-REC-LOST")
def test_a_paused_worker_declared_lost_never_takes_effect_when_it_resumes(
        tmp_path: Path) -> None:
    with Cluster(tmp_path, config=CONFIG, workers=1) as cluster, cluster.client() as client, \
            cluster.ledger_client() as ledger:
        client.set_policy("cancel_order", NONIDEM)
        key = client.ask("fence-worker", "t1", "c1", "cancel_order", LATE_WRITE)
        run = eventually("the run started", lambda: next(iter(ledger.runs(key)), None))
        worker = cluster.worker_of(run.worker)
        cluster.pause(worker)
        assert finished(client, "fence-worker", "c1").status is ToolCallStatus.OUTCOME_UNKNOWN
        declared = time.monotonic()
        cluster.resume(worker)
        assert worker.wait(timeout=5.0 * patience()) == FENCED_EXIT
        writes = ledger.writes(key)
        assert all(not w.applied for w in writes)
        assert [r.end for r in ledger.runs(key)] == ["stopped"]
        ended = ledger.runs(key)[0].ended
        assert ended is not None
        assert ended >= declared - 0.5
