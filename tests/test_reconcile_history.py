"""Reconcile's history step on the real runtime (TC-RCN-HISTORY, D-30, D-31): a call started
before a server upgrade, which the older server recorded outcome_unknown at its restart though
its attempt never reached a worker, is reported from the Flow's history as not run, without
asking the service; a call whose history shows a reach is asked about as before. The client
reads each call's attempt history, kept policy and approval deadline (TC-SNAP-1, D-32)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.reconcile import ReconcileRun, ledger_check, report_unknown_outcomes
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.reconcile import NEVER_REACHED_FINDING
from atmostonce.spec.records import AttemptEnd
from atmostonce.spec.session import ToolCallStatus
from tests.runtime.conftest import call_of, eventually

CONFIG = ExecutorConfig(heartbeat_timeout=2.0, lease=1.0, retry_backoff=0.1,
                        queue_timeout=60.0, run_timeout=60.0, approval_deadline=300.0)
BEFORE_UPGRADE = "atmostonce.executor.before_upgrade:executor"
"""The rule of the server before the upgrade: its restart ends every call in flight with
outcome_unknown, one that was only queued too (D-31)."""


@pytest.fixture
def upgraded() -> Iterator[Cluster]:
    """A server of the older version with no worker: a call is asked and stays queued; the
    server restarts (still the older version, which records it outcome_unknown), then is
    upgraded to the reference executor on the same journal, and a worker joins."""
    with Cluster(config=CONFIG, workers=0, executor=BEFORE_UPGRADE) as cluster:
        with cluster.client() as client:
            client.set_policy("cancel_order", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE,
                                                         requires_approval=False))
            client.open_session("old")
            client.ask("old", "t1", "c1", "cancel_order", {"order_id": "9", "duration": 0})
            assert call_of(client, "old", "c1").status is ToolCallStatus.RUNNING
        cluster.restart_server()
        cluster.executor = None
        cluster.restart_server()
        cluster.start_worker()
        yield cluster


def reconcile(cluster: Cluster, session: str, asked: list[str]) -> ReconcileRun:
    """One run of the library job against the cluster's ledger; `asked` collects the keys the
    service was asked about."""
    host, port = cluster.ledger_address.rsplit(":", 1)

    async def run() -> ReconcileRun:
        check, close = ledger_check(host, int(port), cluster.token)

        async def counted(key: str, arguments: str) -> str:
            asked.append(key)
            return await check(key, arguments)

        try:
            async with cluster.async_client() as client:
                return await report_unknown_outcomes(client, session, counted)
        finally:
            close()

    return asyncio.run(run())


@pytest.mark.clause("TC-RCN-HISTORY", "D-30", "D-31", "TC-RCN-ASK", "TC-RCN-ONCE", "D-8")
def test_a_call_whose_history_shows_no_reach_is_reported_not_run_without_asking_the_service(
        upgraded: Cluster) -> None:
    with upgraded.client() as client, upgraded.ledger_client() as ledger:
        view = call_of(client, "old", "c1")
        assert view.status is ToolCallStatus.OUTCOME_UNKNOWN
        assert view.history
        (attempt,) = client.attempts("old", view.idempotency_key)
        assert (attempt.worker, attempt.handed_at, attempt.end) == \
            ("", None, AttemptEnd.NOT_REACHED)
        assert not ledger.runs(view.idempotency_key)

        # A second call, on the upgraded server, whose worker is lost mid-run: its history
        # shows the reach, so the service must be asked.
        reached = client.ask("old", "t2", "c2", "cancel_order",
                             {"order_id": "10", "duration": 60})
        run = eventually("the second call runs", lambda: ledger.runs(reached))
        upgraded.kill(upgraded.worker_of(run[0].worker))
        eventually("the second call is recorded outcome_unknown",
                   lambda: call_of(client, "old", "c2").status is ToolCallStatus.OUTCOME_UNKNOWN)
        assert [a.reached for a in client.attempts("old", reached)] == [True]

    asked: list[str] = []
    first = reconcile(upgraded, "old", asked)
    assert first.complete, first.interrupted
    by_key = {r.key: r for r in first.reports}
    assert set(by_key) == {view.idempotency_key, reached}
    assert by_key[view.idempotency_key].from_history
    assert NEVER_REACHED_FINDING in by_key[view.idempotency_key].text
    assert not by_key[reached].from_history
    assert asked == [reached]

    again = reconcile(upgraded, "old", asked)
    assert (again.reports, again.already_reported) == ([], 2)
    assert asked == [reached]


@pytest.mark.clause("D-30", "D-32", "TC-SNAP-1", "TC-SNAP-2", "TC-REC-REJ")
def test_the_client_shows_each_calls_attempts_kept_policy_and_own_deadline() -> None:
    with Cluster(config=CONFIG, workers=1) as cluster, cluster.client() as client:
        client.set_policy("lookup_order", ToolPolicy(EffectClass.READ))
        client.set_policy("refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, True, 120.0))
        client.open_session("s")
        looked = client.ask("s", "t1", "c1", "lookup_order", {"order_id": "1"})
        waits = client.ask("s", "t1", "c2", "refund", {"order_id": "1"})
        quick = client.ask("s", "t1", "c3", "refund", {"order_id": "2"}, approval_deadline=0.5)
        client.set_policy("refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, False))

        eventually("the lookup succeeds",
                   lambda: call_of(client, "s", "c1").status is ToolCallStatus.SUCCEEDED)
        (attempt,) = client.attempts("s", looked)
        assert attempt.worker == cluster.workers[0].names[0]
        assert attempt.end is AttemptEnd.RETURNED
        times = (attempt.queued_at, attempt.handed_at, attempt.started_at, attempt.ended_at)
        assert None not in times
        assert list(times) == sorted(times)  # type: ignore[type-var]

        eventually("the call with its own short deadline is rejected",
                   lambda: call_of(client, "s", "c3").status is ToolCallStatus.REJECTED)
        shown = {v.idempotency_key: v for v in client.get_agent_snapshot("s").tool_calls}
        assert (shown[waits].status, shown[waits].effect, shown[waits].requires_approval,
                shown[waits].approval_deadline) == (ToolCallStatus.AWAITING_APPROVAL,
                                                    EffectClass.IDEMPOTENT_WRITE, True, 120.0)
        assert (shown[quick].requires_approval, shown[quick].approval_deadline) == (True, 0.5)
        assert (shown[looked].effect, shown[looked].approval_deadline) == (EffectClass.READ,
                                                                           None)
        assert client.attempts("s", quick) == ()
