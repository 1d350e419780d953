"""The runtime benchmark's throughput and latency on the Restate mapping
(`atmostonce.engines.restate`: the Restate server from npm, the mapping's service workers), so
that `benchmarks/runtime.py --engine restate` can put them beside the reference runtime's.

Detection is not measured: a call whose worker is killed never records outcome_unknown on
Restate, which runs its closure again (docs/engines.md, R-1). A call's latency runs from
sending its ask to reading its `tool_call_finished` event, which the mapping's AgentEvents
stream polls every `client.POLL` seconds; calls are spread over sessions of at most
`PER_SESSION` askers, since a session's exclusive handlers (ask, record) take turns.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.restate.adapter import RestateEngine
from atmostonce.engines.restate.client import POLL, RestateSessions
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


async def _session(api: RestateSessions, session_id: str, numbers: list[int], askers: int,
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


async def _throughput(api: RestateSessions, calls: int, concurrency: int, warmup: int) -> Speed:
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
    await api.close()
    latencies.sort()
    return Speed(calls, seconds, calls / seconds, statistics.median(latencies) * 1000,
                 latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
                 latencies[-1] * 1000, sessions, POLL * 1000)


def run(calls: int, concurrency: int, config: ExecutorConfig) -> Speed:
    """Throughput on a fresh Restate server, ledger and `WORKERS` service workers; every
    process is stopped before this returns."""
    warmup = min(200, max(20, calls // 10))
    with tempfile.TemporaryDirectory(prefix="atmostonce-bench-restate-") as name:
        workdir = Path(name)
        token_file = workdir / "token"
        ensure_token(token_file)
        ledger = spawn("ledger", ["--db", str(workdir / "ledger.db"), "--port", "0",
                                  "--token-file", str(token_file)], workdir / "ledger.log")
        (workdir / "engine").mkdir()
        engine: RestateEngine | None = None
        try:
            port = int(ledger.wait_ready(20.0)["port"])
            engine = RestateEngine(EngineSetup(workdir / "engine", f"127.0.0.1:{port}",
                                               config, WORKERS, DEFAULT_EXECUTOR,
                                               token_file=token_file))
            engine.start()
            api = RestateSessions(engine.server.ingress, config, request_timeout=60.0)
            speed = asyncio.run(_throughput(api, calls, concurrency, warmup))
        finally:
            if engine is not None:
                engine.close()
            ledger.stop()
    return speed
