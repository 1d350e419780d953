"""A LangGraph world for the engine's tests: the effect ledger and a variant's agent processes
on loopback, the session API on the test's own event loop, and the ledger's ground truth;
everything it started is gone when it ends.

    with langgraph_world(tmp_path, "tool_node") as world:
        asyncio.run(scenario(world))
        judged = world.judged()

A scenario asks, answers and reads through `World.observed`, which notes what the client saw in
`World.obs` the way a chaos run's agents do, and kills agent processes through `World.kill`,
which notes the fault the way the nemesis does; `World.judged()` then stops the engine and
checks that history with the chaos run's own checkers (`atmostonce.chaos.judge`). Process
control runs on the test's thread, the one that started the processes. Every wait is on a
condition, bounded by `LIMIT` seconds times the machine's load (`tests.load.patience`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atmostonce.chaos.judge import Judged, judge
from atmostonce.chaos.nemesis import Fault, FaultLog
from atmostonce.chaos.observations import (
    AnswerSeen,
    EventSeen,
    Observations,
    SnapshotSeen,
    now,
)
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.check.history import entries as h
from atmostonce.check.history.entries import HistoryViolation, describe
from atmostonce.engines.adapter import EngineSetup, SessionAPI, WorkerRef, limits_of
from atmostonce.engines.langgraph.adapter import LangGraphEngine, engine_of
from atmostonce.runtime.client import AnswerReply
from atmostonce.runtime.ledger_client import LedgerClient, LedgerRun, Write
from atmostonce.runtime.processes import spawn
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.keys import build_key
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import AgentSnapshot, ToolCallStatus
from tests.engines.observed import ObservedCalls
from tests.load import patience
from tests.runtime.conftest import gone

LIMIT = 30.0
CONFIG = ExecutorConfig(max_attempts=3, retry_backoff=0.2, queue_timeout=10.0, run_timeout=3.0,
                        heartbeat_timeout=2.5, lease=1.0, approval_deadline=30.0)


@dataclass
class World:
    engine: LangGraphEngine
    ledger: LedgerClient
    api: SessionAPI = field(init=False)
    obs: Observations = field(default_factory=Observations)
    faults: FaultLog = field(default_factory=FaultLog)

    def __post_init__(self) -> None:
        self.api = self.engine.client()
        self.observed = Observed(self)

    def judged(self) -> Judged:
        """Stop the engine and check what the client saw, the faults, the server log and the
        ledger, the way a chaos run does."""
        self.engine.close()
        return judge(self.obs, self.faults, self.engine.server_log(), self.ledger.runs(),
                     self.ledger.writes(), self.engine.setup.config, limits_of(self.engine),
                     now())

    def kill(self, worker: WorkerRef) -> None:
        """SIGKILL an agent process, noted as the nemesis notes it."""
        self.engine.kill_worker(worker)
        self.faults.faults.append(Fault("kill", now(), None, worker.id, worker.names))

    def worker_of(self, run: LedgerRun) -> WorkerRef:
        return next(w for w in self.engine.workers() if run.worker in w.names)

    def runs(self, key: str) -> list[LedgerRun]:
        return self.ledger.runs(key)

    def writes(self, key: str) -> list[Write]:
        return self.ledger.writes(key)


@dataclass
class Observed(ObservedCalls):
    """The session API calls of a scenario, each noted in `World.obs` as a chaos agent notes
    it."""

    world: World

    async def approve(self, key: str) -> AnswerReply:
        sent = now()
        reply = await self.world.api.approve(key)
        self.world.obs.answers.append(AnswerSeen(sent, now(), key, True, reply.accepted,
                                                 reply.text))
        return reply

    async def snapshot(self, session_id: str) -> AgentSnapshot:
        sent = now()
        snapshot = await self.world.api.get_agent_snapshot(session_id)
        self.world.obs.snapshots.append(SnapshotSeen(sent, now(), session_id,
                                                     snapshot.tool_calls,
                                                     h.tool_results(session_id, snapshot)))
        return snapshot

    async def status(self, session_id: str, call_id: str) -> ToolCallStatus:
        snapshot = await self.snapshot(session_id)
        return next(v.status for v in snapshot.tool_calls if v.tool_call_id == call_id)

    async def records(self, session_id: str, count: int) -> AgentSnapshot:
        """Wait until `count` calls of the session have a record, each noted as the
        AgentEvents stream would publish it; the session's final snapshot then."""
        async def recorded() -> AgentSnapshot | None:
            snapshot = await self.snapshot(session_id)
            final = [v for v in snapshot.tool_calls if v.status.final]
            return snapshot if len(final) >= count else None

        snapshot: AgentSnapshot = await until("every record", recorded)
        for view in snapshot.tool_calls:
            key = build_key(session_id, view.turn_id, view.tool_call_id)
            self.world.obs.events.append(EventSeen(now(), key, view.status, view.error,
                                                   (session_id, 0), now()))
        self.world.obs.final[session_id] = snapshot
        return snapshot


@contextmanager
def langgraph_world(tmp_path: Path, variant: str, config: ExecutorConfig = CONFIG,
                    workers: int = 1) -> Iterator[World]:
    token_file = tmp_path / "token"
    token = ensure_token(token_file)
    ledger = spawn("ledger", ["--db", str(tmp_path / "ledger.db"), "--port", "0",
                              "--token-file", str(token_file)], tmp_path / "ledger.log")
    (tmp_path / "engine").mkdir()
    engine: LangGraphEngine | None = None
    try:
        port = int(ledger.wait_ready(20.0)["port"])
        engine = engine_of(variant, EngineSetup(tmp_path / "engine", f"127.0.0.1:{port}",
                                                config, workers, DEFAULT_EXECUTOR,
                                                token_file=token_file))
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


def excerpt(judged: Judged, pid: str, key: str) -> str:
    """The violation of `pid` for the call `key`, with the history entries it names: the
    shortest excerpt that shows the break. AssertionError listing every violation when the
    checkers did not report it."""
    history = judged.history
    found: list[HistoryViolation] = [v for v in history.violations
                                     if v.property == pid and v.key == key]
    assert found, (f"the checkers missed {pid} for {key}; they reported: "
                   f"{[v.line() for v in history.violations]}")
    lines = []
    for violation in found:
        lines.append(violation.line())
        lines += [f"  #{p} {describe(judged.entries[p])}" for p in violation.positions]
    return "\n".join(lines)


def gate(path: Path, **arguments: Any) -> dict[str, Any]:
    """Arguments that script a run through its gate files (`atmostonce.runtime.tools`): it
    writes once `path.write` exists and returns once `path.return` exists."""
    return {"gate": str(path), "duration": LIMIT * patience(), **arguments}


def release(path: Path, step: str) -> None:
    path.with_name(f"{path.name}.{step}").write_text("ok")
