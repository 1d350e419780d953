"""Crash safety of the server (D-8, TC-REC-1): the server process is killed with SIGKILL at
seeded random moments while calls are in flight, then restarted from its journal. No record a
client saw is lost or changed, no acknowledged ask is lost, attempts that were out at a worker
are handled as lost to it, every call still goes on to one record, and the effect ledger agrees:
no call recorded as never run ran, and no single-attempt call ran twice."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from atmostonce.runtime.client import ServerUnavailable
from atmostonce.runtime.journal import read_journal
from atmostonce.runtime.processes import Cluster
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import DID_NOT_RUN_PREFIX
from atmostonce.spec.session import AgentSnapshot, ToolCallStatus
from tests.runtime.conftest import eventually

CONFIG = ExecutorConfig(heartbeat_timeout=6.0, lease=3.0, retry_backoff=0.1, max_attempts=3,
                        queue_timeout=60.0, run_timeout=60.0)
SESSION = "crash"
POLICIES = {
    "lookup_order": ToolPolicy(EffectClass.READ),
    "refund": ToolPolicy(EffectClass.IDEMPOTENT_WRITE, requires_approval=False),
    "cancel_order": ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=False),
    "notify_customer": ToolPolicy(EffectClass.UNCLASSIFIED, requires_approval=False),
}
SINGLE_ATTEMPT = {"cancel_order", "notify_customer"}
ASKERS = 4
CALLS = 80
ROUNDS = 3
SETTLE = 25.0


@dataclass
class Seen:
    """What clients were shown before a kill: records (by call id) and acknowledged asks."""

    records: dict[str, tuple[ToolCallStatus, str]] = field(default_factory=dict)
    acked: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Plan:
    kill_after: float
    calls: list[tuple[str, str, dict[str, Any]]]


def plan(rng: random.Random, round_number: int) -> Plan:
    calls = []
    for i in range(CALLS):
        tool = rng.choice(sorted(POLICIES))
        duration = round(rng.uniform(0.0, 0.1), 3)
        calls.append((f"r{round_number}-{i}", tool,
                      {"order_id": str(i), "duration": duration,
                       "write_at": round(rng.uniform(0.0, duration), 3)}))
    return Plan(round(rng.uniform(0.1, 0.6), 3), calls)


async def run_until_killed(cluster: Cluster, round_plan: Plan, seen: Seen) -> None:
    client = cluster.async_client(connect_timeout=0.3)
    for tool, policy in POLICIES.items():
        await client.set_policy(tool, policy)
    await client.open_session(SESSION)
    queue = list(round_plan.calls)

    async def listen() -> None:
        async for event in client.events(SESSION, past=True):
            seen.records[event.tool_call_id] = (event.status, event.error)

    async def ask() -> None:
        while queue:
            call_id, tool, arguments = queue.pop(0)
            await client.ask(SESSION, "t", call_id, tool, arguments)
            seen.acked.add(call_id)
            await asyncio.sleep(0.02)

    tasks = [asyncio.create_task(listen())] + [asyncio.create_task(ask())
                                               for _ in range(ASKERS)]
    await asyncio.sleep(round_plan.kill_after)
    cluster.kill_server()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10.0)
    unexpected = [r for r in results if r is not None and not isinstance(r, ServerUnavailable)]
    assert unexpected == []
    await client.close()


def out_at_a_worker(entries: list[dict[str, Any]]) -> set[str]:
    """Attempts the journal shows handed out and not ended."""
    handed = {e["attempt"] for e in entries if e["type"] == "handed"}
    return handed - {e["attempt"] for e in entries if e["type"] == "ended"}


def check_nothing_lost(snapshot: AgentSnapshot, seen: Seen) -> None:
    calls = {c.tool_call_id: c for c in snapshot.tool_calls}
    for call_id, (status, error) in seen.records.items():
        assert call_id in calls, f"record of {call_id} lost"
        assert (calls[call_id].status, calls[call_id].error) == (status, error), call_id
    assert seen.acked <= set(calls), f"acknowledged asks lost: {seen.acked - set(calls)}"


def check_lost_at_restart(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> int:
    """D-8: each attempt out at a worker when the server died is ended as lost to it first."""
    out = out_at_a_worker(before)
    for attempt in out:
        first = next(e for e in after[len(before):] if e.get("attempt") == attempt)
        assert (first["type"], first.get("end")) == ("ended", "worker_lost"), first
    return len(out)


def settled(cluster: Cluster) -> AgentSnapshot | None:
    cluster.respawn_workers()
    with cluster.client() as client:
        snapshot = client.get_agent_snapshot(SESSION)
    return snapshot if all(c.status.final for c in snapshot.tool_calls) else None


def check_ground_truth(cluster: Cluster, snapshot: AgentSnapshot) -> None:
    with cluster.ledger_client() as ledger:
        runs = ledger.runs()
    runs_of: dict[str, list[str | None]] = {}
    for run in runs:
        runs_of.setdefault(run.key, []).append(run.end)
    for call in snapshot.tool_calls:
        ran = runs_of.get(call.idempotency_key, [])
        if call.error.startswith(DID_NOT_RUN_PREFIX):
            assert ran == [], f"{call.idempotency_key} recorded as never run, but it ran"
        if call.tool in SINGLE_ATTEMPT:
            assert len(ran) <= 1, f"{call.idempotency_key} ran {len(ran)} times"
        if call.status is ToolCallStatus.SUCCEEDED:
            assert "returned" in ran, f"{call.idempotency_key} succeeded without a run"


def crash_and_recover(tmp_path: Path, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"seen": 0, "lost_at_restart": 0, "calls": 0}
    with Cluster(tmp_path, config=CONFIG, workers=2, slots=3) as cluster:
        seen = Seen()
        for round_number in range(ROUNDS):
            asyncio.run(run_until_killed(cluster, plan(rng, round_number), seen))
            before = read_journal(cluster.journal)
            cluster.restart_server()
            cluster.respawn_workers()
            after = read_journal(cluster.journal)
            counts["lost_at_restart"] += check_lost_at_restart(before, after)
            with cluster.client() as client:
                check_nothing_lost(client.get_agent_snapshot(SESSION), seen)
        final = eventually("every call has its record", lambda: settled(cluster), SETTLE)
        check_nothing_lost(final, seen)
        check_ground_truth(cluster, final)
        counts["seen"] = len(seen.records)
        counts["calls"] = len(final.tool_calls)
    return counts


@pytest.mark.clause("D-8", "TC-REC-1", "D-5", "TC-AMO-1", "TC-REC-NOTRUN")
@pytest.mark.parametrize("seed", [11, 23])
def test_a_server_killed_at_random_moments_loses_no_record(tmp_path: Path, seed: int) -> None:
    counts = crash_and_recover(tmp_path, seed)
    assert counts["calls"] > 0
    assert counts["seen"] > 0
    assert counts["lost_at_restart"] > 0


@pytest.mark.slow
@pytest.mark.clause("D-8", "TC-REC-1", "D-5", "TC-AMO-1", "TC-REC-NOTRUN")
@pytest.mark.parametrize("seed", [31, 47, 59, 71])
def test_more_seeds_of_server_kills_lose_no_record(tmp_path: Path, seed: int) -> None:
    assert crash_and_recover(tmp_path, seed)["calls"] > 0
