"""Cancellation on real processes: a timed-out single-attempt call records outcome_unknown
saying the tool may still be running (D-4; failed, saying so, under D-4's other choice), and the
tool does go on (TC-AMO-3); the model's second call of
the same tool then runs alongside it, the documented double run (TC-AMO-4), unless the
executor's fence holds the new call until the old run is over (D-6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from atmostonce.runtime.client import Client
from atmostonce.runtime.ledger_client import LedgerClient, LedgerRun
from atmostonce.runtime.options import ToolOptions
from atmostonce.runtime.processes import Cluster
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallStatus
from tests.runtime.conftest import eventually, finished

NONIDEM = ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False)
SLOW = {"order_id": "5", "duration": 1.2, "write_at": 0.8}


def config(fence: bool, cancel_records_failed: bool = False) -> ExecutorConfig:
    return ExecutorConfig(heartbeat_timeout=2.0, lease=1.0, run_timeout=0.3, fence=fence,
                          cancel_records_failed=cancel_records_failed)


def cancelled_status(cluster: Cluster) -> ToolCallStatus:
    """The record of a cancelled single attempt under the cluster's choice of D-4."""
    return (ToolCallStatus.FAILED if cluster.config.cancel_records_failed
            else ToolCallStatus.OUTCOME_UNKNOWN)


def both_runs(ledger: LedgerClient, first: str, second: str) -> tuple[LedgerRun, LedgerRun] | None:
    runs = {r.key: r for r in ledger.runs() if r.end is not None}
    if first in runs and second in runs:
        return runs[first], runs[second]
    return None


def cancel_then_ask_again(cluster: Cluster, client: Client, session: str
                          ) -> tuple[LedgerRun, LedgerRun]:
    client.set_policy("cancel_order", NONIDEM)
    first = client.ask(session, "t1", "c1", "cancel_order", SLOW)
    event = finished(client, session, "c1")
    assert event.status is cancelled_status(cluster)
    assert "may still be running" in event.error
    second = client.ask(session, "t2", "c2", "cancel_order", {"order_id": "5"})
    with cluster.ledger_client() as ledger:
        old, new = eventually("both runs ended", lambda: both_runs(ledger, first, second))
        assert ledger.applied(first) == 1
    assert old.end == "returned"
    assert old.ended is not None
    return old, new


@pytest.mark.clause("D-4", "TC-AMO-3", "TC-AMO-4", "F-7")
@pytest.mark.parametrize("cancel_records_failed", [False, True])
def test_a_cancelled_run_goes_on_and_a_new_call_of_the_tool_runs_alongside(
        tmp_path: Path, cancel_records_failed: bool) -> None:
    with Cluster(tmp_path, config=config(False, cancel_records_failed), workers=2) as cluster, \
            cluster.client() as client:
        old, new = cancel_then_ask_again(cluster, client, "cancel-plain")
        assert old.ended is not None
        assert new.started < old.ended


@pytest.mark.clause("D-6", "TC-AMO-4")
def test_with_the_fence_a_new_call_waits_until_the_cancelled_run_is_over(
        tmp_path: Path) -> None:
    with Cluster(tmp_path, config=config(fence=True), workers=2) as cluster, \
            cluster.client() as client:
        old, new = cancel_then_ask_again(cluster, client, "cancel-fenced")
        assert old.ended is not None
        assert new.started >= old.ended


@pytest.mark.clause("TC-AMO-3", "D-4")
def test_a_tool_that_honours_cancel_stops_before_its_write(tmp_path: Path) -> None:
    tools = ToolOptions(stop_on_cancel=["cancel_order"])
    with Cluster(tmp_path, config=config(fence=False), workers=1, tools=tools) as cluster, \
            cluster.client() as client, cluster.ledger_client() as ledger:
        client.set_policy("cancel_order", NONIDEM)
        key = client.ask("cancel-honoured", "t1", "c1", "cancel_order", SLOW)
        event = finished(client, "cancel-honoured", "c1")
        assert event.status is ToolCallStatus.OUTCOME_UNKNOWN
        run = eventually("the run ended", lambda: next(
            (r for r in ledger.runs(key) if r.end is not None), None))
        assert run.end == "tool_failed"
        assert ledger.writes(key) == []
