"""A Temporal world for the engine's tests: the effect ledger and the Temporal adapter's
processes (dev server, session worker, tool workers) on loopback, the session API on the test's
own event loop, and the ledger's ground truth; everything it started is gone when it ends.

    with temporal_world(tmp_path, CONFIG, workers=2) as world:
        asyncio.run(scenario(world))

Process control (kill, pause, cut, restart) runs on the test's thread, the one that started the
processes; the session API runs in `asyncio.run` on that same thread, so a scenario can call
both. Every wait is on a condition, bounded by `LIMIT` times the machine's load.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atmostonce.check.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.temporal import mapping
from atmostonce.engines.temporal.adapter import TemporalEngine
from atmostonce.engines.temporal.client import TemporalSessions
from atmostonce.runtime.client import ServerUnavailable
from atmostonce.runtime.ledger_client import LedgerClient, Run, Write
from atmostonce.runtime.processes import spawn
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallFinished
from tests.load import patience
from tests.runtime.conftest import gone

LIMIT = 30.0


@dataclass
class World:
    engine: TemporalEngine
    ledger: LedgerClient
    api: TemporalSessions = field(init=False)

    def __post_init__(self) -> None:
        self.api = TemporalSessions(self.engine.server.address, self.engine.settings,
                                    opened=lambda _: None)

    def runs(self, key: str) -> list[Run]:
        return self.ledger.runs(key)

    def writes(self, key: str) -> list[Write]:
        return self.ledger.writes(key)


@contextmanager
def temporal_world(tmp_path: Path, config: ExecutorConfig, workers: int = 1,
                   variant: mapping.Variant = mapping.PAGE) -> Iterator[World]:
    token_file = tmp_path / "token"
    token = ensure_token(token_file)
    ledger = spawn("ledger", ["--db", str(tmp_path / "ledger.db"), "--port", "0",
                              "--token-file", str(token_file)], tmp_path / "ledger.log")
    (tmp_path / "engine").mkdir()
    engine: TemporalEngine | None = None
    try:
        port = int(ledger.wait_ready(20.0)["port"])
        engine = TemporalEngine(EngineSetup(tmp_path / "engine", f"127.0.0.1:{port}", config,
                                            workers, DEFAULT_EXECUTOR, token_file=token_file),
                                variant)
        engine.start()
        with LedgerClient("127.0.0.1", port, token=token) as truth:
            yield World(engine, truth)
    finally:
        pids = [ledger.pid, *(engine.pids() if engine is not None else [])]
        if engine is not None:
            engine.close()
        ledger.stop()
        assert all(gone(pid) for pid in pids), "a process outlived the world"


async def until(what: str, probe: Callable[[], object], limit: float = LIMIT) -> Any:
    """Poll `probe` (plain or async) until it gives something true; that value. AssertionError
    after `limit` seconds times the machine's patience."""
    bound = limit * patience()
    deadline = time.monotonic() + bound
    while True:
        value = probe()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {bound:.3g} s")
        await asyncio.sleep(0.05)


async def record(world: World, session_id: str, call_id: str,
                 limit: float = LIMIT) -> ToolCallFinished:
    """The call's tool_call_finished event, from the session's AgentEvents stream, subscribed
    again while the server is away."""
    async def first() -> ToolCallFinished:
        while True:
            try:
                async for event in world.api.events(session_id, past=True):
                    if event.tool_call_id == call_id:
                        return event
            except ServerUnavailable:
                await asyncio.sleep(0.1)

    return await asyncio.wait_for(first(), limit * patience())
