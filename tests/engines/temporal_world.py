"""A Temporal world for the engine's tests: the effect ledger and the Temporal adapter's
processes (dev server, session worker, tool workers) on loopback, the session API on the test's
own event loop, and the ledger's ground truth; everything it started is gone when it ends.

    with temporal_world(tmp_path, CONFIG, workers=2) as world:
        asyncio.run(scenario(world))

Process control (kill, pause, cut, restart) runs on the test's thread, the one that started the
processes; the session API runs in `asyncio.run` on that same thread, so a scenario can call
both. Every wait is on a condition, bounded by `LIMIT` times the machine's load.

A scenario that asks through `World.observed` (and reads records with `record`) leaves what its
client saw in `World.obs`, the way a chaos run's agents do; `World.judged()` then stops the
engine and checks that history with the chaos run's own checkers (`atmostonce.chaos.judge`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from atmostonce.chaos.judge import Judged, judge
from atmostonce.chaos.nemesis import FaultLog
from atmostonce.chaos.observations import EventSeen, Observations, now
from atmostonce.chaos.reconcile import ReconcileJob
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import EngineSetup, ServerLog, limits_of
from atmostonce.engines.temporal import mapping
from atmostonce.engines.temporal.adapter import TemporalEngine
from atmostonce.engines.temporal.client import TemporalSessions
from atmostonce.runtime.client import ServerUnavailable
from atmostonce.runtime.ledger_client import LedgerClient, LedgerRun, Write
from atmostonce.runtime.processes import spawn
from atmostonce.runtime.reconcile import ledger_check
from atmostonce.runtime.tokens import ensure_token
from atmostonce.runtime.wire import LOOPBACK
from atmostonce.spec.keys import build_key
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallFinished
from tests.engines.observed import ObservedCalls
from tests.load import patience
from tests.runtime.conftest import gone

LIMIT = 30.0


@dataclass
class World:
    engine: TemporalEngine
    ledger: LedgerClient
    ledger_at: tuple[int, str]
    """The ledger's port and token, for reconcile's check."""
    api: TemporalSessions = field(init=False)
    obs: Observations = field(default_factory=Observations)
    """What the client saw through `observed` and `record`, for `judged`."""
    faults: FaultLog = field(default_factory=FaultLog)
    """The faults a scenario noted as a chaos run's nemesis notes them, for `judged`."""

    def __post_init__(self) -> None:
        self.api = cast(TemporalSessions, self.engine.client())
        self.observed = Observed(self)

    def judged(self, edit: Callable[[ServerLog], ServerLog] = lambda log: log,
               ran: Callable[[LedgerRun], bool] = lambda run: True) -> Judged:
        """Stop the engine (its histories are read first) and check what the client saw, the
        server log (as `edit` leaves it) and the ledger's runs that `ran` keeps, the way a
        chaos run does."""
        self.engine.close()
        runs = [run for run in self.ledger.runs() if ran(run)]
        return judge(self.obs, self.faults, edit(self.engine.server_log()), runs,
                     self.ledger.writes(), self.engine.setup.config, limits_of(self.engine),
                     now())

    def runs(self, key: str) -> list[LedgerRun]:
        return self.ledger.runs(key)

    def writes(self, key: str) -> list[Write]:
        return self.ledger.writes(key)


@dataclass
class Observed(ObservedCalls):
    """The session API calls of a scenario, each noted in `World.obs` as a chaos agent notes
    it."""

    world: World

    async def reconcile(self, session_id: str) -> None:
        """The chaos run's reconcile job on the session, twice (the rerun must report nothing
        new, TC-RCN-ONCE), then the session's snapshot, whose user messages are the reports
        that landed."""
        check, close = ledger_check(LOOPBACK, *self.world.ledger_at)
        job = ReconcileJob(self.world.api, self.world.obs, check, 0, asyncio.Event(),
                           lambda coro: coro.close())
        try:
            for _ in range(2):
                assert await job.run(session_id) is not None, "reconcile could not run"
        finally:
            close()
        self.world.obs.final[session_id] = await self.world.api.get_agent_snapshot(session_id)


@contextmanager
def temporal_world(tmp_path: Path, config: ExecutorConfig, workers: int = 1,
                   variant: mapping.Variant = mapping.PAGE,
                   make: Callable[[EngineSetup], TemporalEngine] | None = None
                   ) -> Iterator[World]:
    """`make` builds another mapping's engine on Temporal (Pydantic AI's) from the setup."""
    token_file = tmp_path / "token"
    token = ensure_token(token_file)
    ledger = spawn("ledger", ["--db", str(tmp_path / "ledger.db"), "--port", "0",
                              "--token-file", str(token_file)], tmp_path / "ledger.log")
    (tmp_path / "engine").mkdir()
    engine: TemporalEngine | None = None
    try:
        port = int(ledger.wait_ready(20.0)["port"])
        setup = EngineSetup(tmp_path / "engine", f"127.0.0.1:{port}", config, workers,
                            DEFAULT_EXECUTOR, token_file=token_file)
        engine = make(setup) if make is not None else TemporalEngine(setup, variant)
        engine.start()
        with LedgerClient("127.0.0.1", port, token=token) as truth:
            yield World(engine, truth, (port, token))
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
        generation = 0
        while True:
            subscribed = now()
            try:
                async for event in world.api.events(session_id, past=True):
                    if event.tool_call_id == call_id:
                        key = build_key(session_id, event.turn_id, call_id)
                        world.obs.events.append(EventSeen(now(), key, event.status,
                                                          event.error,
                                                          (session_id, generation),
                                                          subscribed))
                        return event
            except ServerUnavailable:
                generation += 1
                await asyncio.sleep(0.1)

    return await asyncio.wait_for(first(), limit * patience())
