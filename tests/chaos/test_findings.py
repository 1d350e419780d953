"""What chaos on the real runtime found, each finding pinned by a test that reproduces it.

A worker whose connection resets while a single-attempt tool runs used to connect again within
its lease and list the run as still going; the server recorded the call outcome_unknown at once
while the run went on, an undocumented way to run a write twice (D-12, A-DOUBLE-RUN-SHAPE). A
cut-off slot now connects again only once its run is over, ended by itself or by its lease.
The simulator never meets this, since each of its connections is a fresh worker;
`atmostonce chaos --nemesis partition --cuts drop` does.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import CutMode, EngineSetup
from atmostonce.engines.reference.adapter import ReferenceEngine
from atmostonce.runtime.ledger_client import LedgerClient, LedgerRun
from atmostonce.runtime.processes import spawn
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallFinished, ToolCallStatus
from tests.load import patience
from tests.runtime.conftest import gone

CONFIG = ExecutorConfig(heartbeat_timeout=2.5, lease=1.0, retry_backoff=0.2,
                        queue_timeout=10.0, run_timeout=30.0)
SESSION = "reset"


@pytest.mark.clause("D-12", "TC-AMO-2", "TC-AMO-4")
def test_no_run_goes_on_once_its_call_is_recorded_outcome_unknown_after_a_reset(
        tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token = ensure_token(token_file)
    ledger = spawn("ledger", ["--db", str(tmp_path / "ledger.db"), "--port", "0",
                              "--token-file", str(token_file)], tmp_path / "ledger.log")
    (tmp_path / "engine").mkdir()
    engine: ReferenceEngine | None = None
    try:
        port = int(ledger.wait_ready(20.0)["port"])
        engine = ReferenceEngine(EngineSetup(tmp_path / "engine", f"127.0.0.1:{port}", CONFIG,
                                             1, DEFAULT_EXECUTOR, token_file=token_file))
        engine.start()
        with LedgerClient("127.0.0.1", port, token=token) as runs:
            event, seen_at, ran = asyncio.run(reset_mid_run(engine, runs))
        assert event.status is ToolCallStatus.OUTCOME_UNKNOWN
        assert ran
        assert all(r.ended is not None and r.ended <= seen_at for r in ran), \
            "the run went on after its call was recorded outcome_unknown"
    finally:
        pids = [ledger.pid, *(engine.pids() if engine is not None else [])]
        if engine is not None:
            engine.close()
        ledger.stop()
        assert all(gone(pid) for pid in pids)


async def reset_mid_run(engine: ReferenceEngine, ledger: LedgerClient
                        ) -> tuple[ToolCallFinished, float, list[LedgerRun]]:
    """A single-attempt call that runs two seconds; its worker's connection is reset for a
    fifth of a second, well inside the lease, while the tool runs."""
    client = engine.client()
    worker = engine.workers()[0]
    try:
        await client.set_policy("cancel_order", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE,
                                                           requires_approval=False))
        await client.open_session(SESSION)
        key = await client.ask(SESSION, "t1", "c1", "cancel_order",
                               json.dumps({"order_id": "9", "duration": 2.0}))
        deadline = time.monotonic() + 10.0 * patience()
        while not ledger.runs(key) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        engine.cut(worker, CutMode.DROP)
        await asyncio.sleep(0.2)
        engine.heal(worker)
        async for event in client.events(SESSION, past=True):
            if event.tool_call_id == "c1":
                return event, time.monotonic(), ledger.runs(key)
        raise AssertionError("the events stream ended")
    finally:
        await client.close()
