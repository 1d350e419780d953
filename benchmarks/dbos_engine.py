"""The runtime benchmark's measures on the DBOS mapping: tool calls per second and ask-to-record
latency on the mapping's application processes (`atmostonce.engines.dbos`, the `steps` variant,
or Pydantic AI's `dbos_steps` on the same processes; system database on SQLite), and the time
from a killed process to its call's record once a process that took over its executor id ran the
step again, so that `benchmarks/runtime.py --engine dbos` (or `pydantic-ai-dbos`) can put them
beside the reference runtime's.

The calls are spread over sessions of at most `PER_SESSION` askers (a session's workflow runs
its calls one after another); a call's latency runs from sending its ask to reading its
`tool_call_finished` event, which the mapping's AgentEvents stream polls every `client.POLL`
seconds. DBOS records no outcome_unknown for a killed step, it runs it again: the recovery time
is no detection time and gets no ratio.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import EngineSetup, WorkerRef
from atmostonce.engines.dbos.adapter import DBOSEngine, engine_of
from atmostonce.engines.dbos.client import POLL, DBOSSessions
from atmostonce.runtime.ledger_client import LedgerClient
from atmostonce.runtime.processes import spawn
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallStatus

PER_SESSION = 4
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
class Recovery:
    seconds: list[float]
    worst: float


async def _session(api: DBOSSessions, session_id: str, numbers: list[int], askers: int,
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


async def _throughput(api: DBOSSessions, calls: int, concurrency: int, warmup: int) -> Speed:
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


async def _recover_once(engine: DBOSEngine, api: DBOSSessions, ledger: LedgerClient,
                        number: int) -> float:
    call_id = f"kill-{number}"
    key = await api.ask("recover", f"k{number}", call_id, "lookup_order", '{"duration": 1}')
    while not ledger.runs(key):
        await asyncio.sleep(0.01)
    worker = ledger.runs(key)[0].worker
    victim: WorkerRef = next(w for w in engine.workers() if worker in w.names)
    engine.kill_worker(victim)
    killed = time.monotonic()
    engine.start_worker()
    async for event in api.events("recover", past=True):
        if event.tool_call_id == call_id:
            if event.status is not ToolCallStatus.SUCCEEDED:
                raise RuntimeError(f"{call_id} recorded {event.status.value}")
            break
    return time.monotonic() - killed


async def _recovery(engine: DBOSEngine, api: DBOSSessions, ledger: LedgerClient,
                    kills: int) -> Recovery:
    await api.open_session("recover")
    seconds = [await _recover_once(engine, api, ledger, n) for n in range(kills)]
    await api.close()
    return Recovery(seconds, max(seconds))


async def _measure(engine: DBOSEngine, ledger: LedgerClient, calls: int, concurrency: int,
                   kills: int) -> tuple[Speed, Recovery]:
    api = DBOSSessions(engine.store, engine.system_database, engine.setup.config)
    speed = await _throughput(api, calls, concurrency, min(200, max(20, calls // 10)))
    return speed, await _recovery(engine, api, ledger, kills)


def steps(setup: EngineSetup) -> DBOSEngine:
    return engine_of("steps", setup)


def run(calls: int, concurrency: int, kills: int, config: ExecutorConfig,
        factory: Callable[[EngineSetup], DBOSEngine] = steps) -> tuple[Speed, Recovery]:
    """Both measures on a fresh ledger and `WORKERS` application processes of the DBOS variant
    `factory` makes (the `steps` variant unless told); every process is stopped before this
    returns."""
    with tempfile.TemporaryDirectory(prefix="atmostonce-bench-dbos-") as name:
        workdir = Path(name)
        token_file = workdir / "token"
        token = ensure_token(token_file)
        ledger = spawn("ledger", ["--db", str(workdir / "ledger.db"), "--port", "0",
                                  "--token-file", str(token_file)], workdir / "ledger.log")
        (workdir / "engine").mkdir()
        engine: DBOSEngine | None = None
        try:
            port = int(ledger.wait_ready(20.0)["port"])
            engine = factory(EngineSetup(workdir / "engine", f"127.0.0.1:{port}", config,
                                         WORKERS, DEFAULT_EXECUTOR, token_file=token_file))
            engine.start()
            with LedgerClient("127.0.0.1", port, token=token) as truth:
                found = asyncio.run(_measure(engine, truth, calls, concurrency, kills))
        finally:
            if engine is not None:
                engine.close()
            ledger.stop()
    return found
