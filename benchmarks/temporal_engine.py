"""The runtime benchmark's measures on the Temporal mapping: tool calls per second and ask-to-record
latency, and the time from a killed worker to its call's outcome_unknown record, on the dev
server with the mapping's worker processes (`atmostonce.engines.temporal`), so that
`benchmarks/runtime.py --engine temporal` can put them beside the reference runtime's; with
`--engine pydantic-ai` the same on Pydantic AI's `recommended` variant (its defaults never record
a killed worker's call: they retry it).

The calls are spread over sessions of at most `PER_SESSION` askers, so that no workflow's history
grows past a few thousand events; a call's latency runs from sending its ask to reading its
`tool_call_finished` event, which the mapping's AgentEvents stream polls every
`client.POLL` seconds.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import EngineSetup, WorkerRef
from atmostonce.engines.temporal.adapter import TemporalEngine
from atmostonce.engines.temporal.client import POLL, TemporalSessions
from atmostonce.runtime.ledger_client import LedgerClient
from atmostonce.runtime.processes import spawn
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallStatus

PER_SESSION = 8
WORKERS = 2


@dataclass(frozen=True)
class Speed:
    calls: int
    seconds: float
    calls_per_second: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    sessions: int
    poll_ms: float
    workers: int = WORKERS


@dataclass(frozen=True)
class Detection:
    heartbeat_timeout: float
    seconds: list[float]
    worst: float


async def _session(api: TemporalSessions, session_id: str, numbers: list[int], askers: int,
                   latencies: list[float] | None) -> None:
    """`numbers` read calls in `session_id`, `askers` at a time."""
    waiting: dict[str, asyncio.Future[ToolCallStatus]] = {}
    loop = asyncio.get_running_loop()

    async def listen() -> None:
        async for event in api.events(session_id, past=True):
            future = waiting.pop(event.tool_call_id, None)
            if future is not None and not future.done():
                future.set_result(event.status)

    listener = asyncio.create_task(listen())
    queue = iter(numbers)

    async def asker() -> None:
        for number in queue:
            call_id = f"c{number}"
            future: asyncio.Future[ToolCallStatus] = loop.create_future()
            waiting[call_id] = future
            started = time.perf_counter()
            await api.ask(session_id, "t", call_id, "lookup_order", "{}")
            status = await future
            if status is not ToolCallStatus.SUCCEEDED:
                raise RuntimeError(f"{session_id}/{call_id} recorded {status.value}")
            if latencies is not None:
                latencies.append(time.perf_counter() - started)

    try:
        await asyncio.gather(*(asker() for _ in range(askers)))
    finally:
        listener.cancel()


async def _throughput(api: TemporalSessions, calls: int, concurrency: int,
                      warmup: int) -> Speed:
    await api.set_policy("lookup_order", ToolPolicy(EffectClass.READ))
    sessions = max(1, -(-concurrency // PER_SESSION))
    askers = -(-concurrency // sessions)
    for n in range(sessions):
        await api.open_session(f"bench{n}")
    await asyncio.gather(*(_session(api, f"bench{n}", list(range(n, warmup, sessions)),
                                    askers, None) for n in range(sessions)))
    latencies: list[float] = []
    started = time.perf_counter()
    await asyncio.gather(*(_session(api, f"bench{n}",
                                    list(range(warmup + n, warmup + calls, sessions)), askers,
                                    latencies) for n in range(sessions)))
    seconds = time.perf_counter() - started
    latencies.sort()
    return Speed(calls, seconds, calls / seconds, statistics.median(latencies) * 1000,
                 latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
                 latencies[-1] * 1000, sessions, POLL * 1000)


async def _detect_once(engine: TemporalEngine, api: TemporalSessions, ledger: LedgerClient,
                       number: int) -> float:
    call_id = f"kill-{number}"
    key = await api.ask("detect", "k", call_id, "cancel_order", '{"duration": 600}')
    while not ledger.runs(key):
        await asyncio.sleep(0.01)
    worker = ledger.runs(key)[0].worker
    victim: WorkerRef = next(w for w in engine.workers() if worker in w.names)
    engine.kill_worker(victim)
    killed = time.monotonic()
    async for event in api.events("detect", past=True):
        if event.tool_call_id == call_id:
            if event.status is not ToolCallStatus.OUTCOME_UNKNOWN:
                raise RuntimeError(f"{call_id} recorded {event.status.value}")
            break
    seconds = time.monotonic() - killed
    engine.start_worker()
    return seconds


async def _detection(engine: TemporalEngine, api: TemporalSessions, ledger: LedgerClient,
                     kills: int) -> Detection:
    await api.set_policy("cancel_order", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE,
                                                    requires_approval=False))
    await api.open_session("detect")
    seconds = [await _detect_once(engine, api, ledger, n) for n in range(kills)]
    return Detection(engine.setup.config.heartbeat_timeout, seconds, max(seconds))


def run(calls: int, concurrency: int, slots: int, kills: int, config: ExecutorConfig,
        pydantic_ai: bool = False) -> tuple[Speed, Detection]:
    """Both measures on a fresh dev server, ledger and `WORKERS` tool workers of `slots`
    activities each (with `pydantic_ai`, the workers of Pydantic AI's `recommended` variant,
    Temporal's own slots); every process is stopped before this returns."""
    warmup = min(200, max(20, calls // 10))
    with tempfile.TemporaryDirectory(prefix="atmostonce-bench-temporal-") as name:
        workdir = Path(name)
        token_file = workdir / "token"
        token = ensure_token(token_file)
        ledger = spawn("ledger", ["--db", str(workdir / "ledger.db"), "--port", "0",
                                  "--token-file", str(token_file)], workdir / "ledger.log")
        (workdir / "engine").mkdir()
        engine: TemporalEngine | None = None
        try:
            port = int(ledger.wait_ready(20.0)["port"])
            setup = EngineSetup(workdir / "engine", f"127.0.0.1:{port}", config, WORKERS,
                                DEFAULT_EXECUTOR, token_file=token_file)
            sessions: type[TemporalSessions] = TemporalSessions
            if pydantic_ai:
                from atmostonce.engines.pydantic_ai.adapter import PydanticSessions, engine_of

                engine, sessions = engine_of("recommended", setup), PydanticSessions
            else:
                engine = TemporalEngine(setup, slots=slots)
            engine.start()
            api = sessions(engine.server.address, engine.settings, request_timeout=60.0)
            speed = asyncio.run(_throughput(api, calls, concurrency, warmup))
            with LedgerClient("127.0.0.1", port, token=token) as truth:
                found = asyncio.run(_detection(engine, sessions(
                    engine.server.address, engine.settings, request_timeout=60.0), truth,
                    kills))
        finally:
            if engine is not None:
                engine.close()
            ledger.stop()
    return speed, found
