"""Tool calls end to end on real processes: each record kind arises the way the spec says, the
effect ledger confirms what really ran, and a worker killed with SIGKILL is found out within
the heartbeat timeout."""

from __future__ import annotations

import asyncio
import time

import pytest

from atmostonce.runtime.client import Client, ServerUnavailable
from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.wire import LOOPBACK, parse_address
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.records import OUTCOME_UNKNOWN_ERROR
from atmostonce.spec.session import OUTCOME_UNKNOWN_TOOL_RESULT, MessageRole, ToolCallStatus
from tests.load import patience
from tests.runtime.conftest import CONFIG, call_of, eventually, finished

READ = ToolPolicy(EffectClass.READ)
NONIDEM_NO_APPROVAL = ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False)


@pytest.mark.clause("TC-EFF-READ", "TC-REC-SUCC", "TC-KEY-1", "TC-KEY-2")
def test_a_read_returns_and_the_ledger_saw_one_run_with_its_key(cluster: Cluster,
                                                                client: Client) -> None:
    client.set_policy("lookup_order", READ)
    key = client.ask("e2e-read", "t1", "c1", "lookup_order", {"order_id": "7"})
    assert key == "e2e-read/t1/c1"
    assert finished(client, "e2e-read", "c1").status is ToolCallStatus.SUCCEEDED
    snapshot = client.get_agent_snapshot("e2e-read")
    assert snapshot.messages[-1].tool_output == '{"order_id": "7", "status": "shipped"}'
    with cluster.ledger_client() as ledger:
        runs = ledger.runs(key)
    assert [(r.key, r.end) for r in runs] == [(key, "returned")]
    assert runs[0].worker in {n for w in cluster.workers for n in w.names}


@pytest.mark.clause("TC-APR-2", "TC-APR-3", "D-7", "TC-REC-REJ")
def test_approval_gates_the_run_and_a_rejected_call_never_runs(cluster: Cluster,
                                                               client: Client) -> None:
    session = "e2e-approval"
    client.set_policy("refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE, requires_approval=True))
    granted = client.ask(session, "t1", "c1", "refund", {"order_id": "8"})
    refused = client.ask(session, "t1", "c2", "refund", {"order_id": "9"})
    assert call_of(client, session, "c1").status is ToolCallStatus.AWAITING_APPROVAL
    with cluster.ledger_client() as ledger:
        assert ledger.runs(granted) == []
    assert client.approve(granted).accepted
    assert not client.approve(granted).accepted
    assert client.reject(refused).accepted
    assert "already rejected" in client.approve(refused).text
    assert not client.approve("e2e-approval/t1/nobody").accepted
    assert finished(client, session, "c1").status is ToolCallStatus.SUCCEEDED
    assert finished(client, session, "c2").status is ToolCallStatus.REJECTED
    with cluster.ledger_client() as ledger:
        assert ledger.applied(granted) == 1
        assert ledger.runs(refused) == []


@pytest.mark.clause("D-3", "TC-REC-FAIL")
def test_a_failure_the_tool_reports_is_recorded_failed_and_not_retried(cluster: Cluster,
                                                                       client: Client) -> None:
    client.set_policy("lookup_order", READ)
    key = client.ask("e2e-fail", "t1", "c1", "lookup_order", {"fail": True})
    event = finished(client, "e2e-fail", "c1")
    assert event.status is ToolCallStatus.FAILED
    assert "the tool reported a failure" in event.error
    with cluster.ledger_client() as ledger:
        assert [r.end for r in ledger.runs(key)] == ["tool_failed"]


@pytest.mark.clause("TC-EFF-IDEM", "TC-KEY-3", "TC-EFF-NONIDEM")
def test_the_ledger_drops_a_repeated_key_only_for_a_keyed_service(cluster: Cluster) -> None:
    writes = [("refund", "k/t/1"), ("refund", "k/t/1"),
              ("cancel_order", "k/t/2"), ("cancel_order", "k/t/2")]

    async def write_all() -> list[bool]:
        ledger = AsyncLedger(*parse_address(cluster.ledger_address), token=cluster.token,
                             workers=("test",), incarnation="test")
        await ledger.connect()
        answers = []
        for n, (tool, k) in enumerate(writes):
            run = {"worker": "test", "attempt": f"{k}#{n}", "key": k, "tool": tool}
            await ledger.request({"op": "run_started", **run})
            answers.append(await ledger.request({"op": "write", **run, "payload": "{}",
                                                 "deadline": None}))
        ledger.close()
        return [bool(a["applied"]) for a in answers]

    assert asyncio.run(write_all()) == [True, False, True, True]
    with cluster.ledger_client() as ledger:
        assert ledger.applied("k/t/1") == 1
        assert ledger.applied("k/t/2") == 2


@pytest.mark.clause("TC-AMO-2", "TC-REC-LOST", "TC-REC-UNK", "TC-RCN-FIND", "TC-RCN-TELL")
def test_a_worker_killed_mid_call_leaves_outcome_unknown_found_within_the_timeout(
        cluster: Cluster, client: Client) -> None:
    session = "e2e-kill"
    client.set_policy("cancel_order", NONIDEM_NO_APPROVAL)
    key = client.ask(session, "t1", "c1", "cancel_order", {"duration": 60})
    ledger = cluster.ledger_client()
    eventually("the write took effect", lambda: ledger.applied(key) == 1)
    run = ledger.runs(key)[0]
    victim = cluster.worker_of(run.worker)
    cluster.kill(victim)
    killed = time.monotonic()
    event = finished(client, session, "c1")
    detected = time.monotonic() - killed
    assert event.status is ToolCallStatus.OUTCOME_UNKNOWN
    assert event.error.startswith(OUTCOME_UNKNOWN_ERROR)
    assert event.error.endswith("(attempt progress NOT_COMPLETED)")
    assert detected <= CONFIG.heartbeat_timeout + 1.0 * patience()
    assert OUTCOME_UNKNOWN_TOOL_RESULT in client.get_agent_snapshot(session).messages[-1]\
        .tool_output
    assert ledger.applied(key) == 1
    assert [r.end for r in ledger.runs(key)] == [None]
    assert client.send_user_message(session, f"Note from the shop: done (tool call {key})")
    assert client.get_agent_snapshot(session).messages[-1].role is MessageRole.USER
    ledger.close()


@pytest.mark.clause("TC-REC-RETRY", "TC-KEY-1", "TC-AMO-1")
def test_a_read_whose_worker_was_killed_runs_again_elsewhere_with_the_same_key(
        cluster: Cluster, client: Client) -> None:
    session = "e2e-retry"
    client.set_policy("lookup_order", READ)
    key = client.ask(session, "t1", "c1", "lookup_order", {"duration": 60})
    ledger = cluster.ledger_client()
    first = eventually("the run started", lambda: next(iter(ledger.runs(key)), None))
    cluster.kill(cluster.worker_of(first.worker))
    cluster.respawn_workers()
    client.set_policy("lookup_order", READ)
    runs = eventually("a second run", lambda: ledger.runs(key) if len(ledger.runs(key)) > 1
                      else None)
    assert {r.key for r in runs} == {key}
    assert runs[0].attempt != runs[1].attempt
    assert runs[0].worker != runs[1].worker
    ledger.close()


def test_two_worker_processes_with_one_name_never_share_a_worker_name(cluster: Cluster) -> None:
    one = cluster.start_worker(name="twin")
    two = cluster.start_worker(name="twin")
    assert one.names != two.names
    assert one.names[0] == f"twin-{one.pid}"


def test_an_unreachable_server_is_a_one_line_error(cluster: Cluster) -> None:
    with Client(LOOPBACK, 1, token=cluster.token, connect_timeout=0.2) as nobody, \
            pytest.raises(ServerUnavailable) as caught:
        nobody.get_agent_snapshot("s")
    assert isinstance(caught.value, SpecError)
    assert "cannot reach the atmostonce server at 127.0.0.1:1" in str(caught.value)
    assert "\n" not in str(caught.value)
