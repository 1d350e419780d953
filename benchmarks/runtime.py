"""How fast the real runtime runs tool calls end to end, and how fast it notices a killed worker.

Starts the effect ledger, the server (journal fsynced: SQLite WAL with synchronous=FULL, group
commit) and 2 worker processes on loopback, then:

- throughput and latency: `--calls` read calls (`lookup_order`, no approval, zero duration)
  asked by `--concurrency` concurrent askers on one client connection; a call's latency runs
  from sending its ask to receiving its `tool_call_finished` event, so it includes the journal
  commits before the go-ahead (D-5) and before the record is published;
- CPU per call: the CPU seconds (user + system, every thread) each process spent during the
  measured calls, over the calls, from /proc (Linux only): steadier than the wall-clock figures
  on a machine other work shares (it still grows a little when calls come slower and batch
  less), so a change's cost shows side by side;
- detection: a non-idempotent call runs on a worker whose process is then killed with SIGKILL;
  the time from the kill to the call's `outcome_unknown` event, against the heartbeat timeout
  (target: within heartbeat timeout + 1 s).

With `--engine temporal` (or `pydantic-ai`, Pydantic AI's `recommended` variant on the same
dev server) the same measures run on the Temporal mapping right after
(`benchmarks/temporal_engine.py`: dev server, the mapping's tool workers) and the report gives
Temporal's figures beside the runtime's, with their ratios. With `--engine dbos` the same for the
DBOS mapping (`benchmarks/dbos_engine.py`), whose kill measure is a recovery time, not a
detection time (DBOS runs a killed step again); `--engine pydantic-ai-dbos` the same on Pydantic
AI's DBOS integration (`dbos_steps`). With `--engine restate` the
throughput and latency run on the Restate mapping (`benchmarks/restate_engine.py`); a killed
worker's call is run again there, never recorded outcome_unknown, so detection is not measured.

With fewer slots in all (`--slots` times 2 worker processes) than calls in flight, calls wait
for a slot and calls/s measures a slot's cycle: the commit that makes the finished call's record
and the next hand-out durable, the go-ahead, and the run start the ledger must hold before the
tool runs. Give every call in flight a slot (`--slots 32` at 64) to measure the journal instead.

A benchmark, never a timed test; figures come from one run on this machine.

    python benchmarks/runtime.py [--calls N] [--concurrency C] [--slots S] [--kills K]
                                 [--engine reference|temporal|pydantic-ai|dbos|
                                           pydantic-ai-dbos|restate] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if not __package__:  # run as a script: measure this checkout, not an installed copy
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from atmostonce.runtime.client import AsyncClient
from atmostonce.runtime.processes import Cluster
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallStatus

if TYPE_CHECKING:
    from benchmarks import dbos_engine, restate_engine, temporal_engine

SESSION = "bench"
WORKERS = 2
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` (all its threads) so far; None without
    /proc."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _processes(cluster: Cluster) -> dict[str, int]:
    """The processes whose CPU the throughput measure reads, by role."""
    named = {"client": os.getpid()}
    if cluster.server is not None:
        named["server"] = cluster.server.pid
    if cluster.ledger is not None:
        named["ledger"] = cluster.ledger.pid
    for number, worker in enumerate(cluster.workers, 1):
        named[f"worker {number}"] = worker.pid
    return named


def _cpu(processes: dict[str, int]) -> dict[str, float]:
    readings = {role: _cpu_seconds(pid) for role, pid in processes.items()}
    return {role: seconds for role, seconds in readings.items() if seconds is not None}


@dataclass(frozen=True)
class Throughput:
    calls: int
    seconds: float
    calls_per_second: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    commits: int
    entries: int
    entries_per_commit: float
    cpu_ms_per_call: dict[str, float]
    """CPU milliseconds per measured call of each process (server, ledger, each worker
    process, client); empty where /proc cannot be read."""


@dataclass(frozen=True)
class Detection:
    heartbeat_timeout: float
    lease: float
    heartbeat_interval: float
    seconds: list[float]
    worst: float
    target: float
    met: bool


async def _throughput(cluster: Cluster, calls: int, concurrency: int,
                      warmup: int) -> Throughput:
    client = cluster.async_client()
    await client.set_policy("lookup_order", ToolPolicy(EffectClass.READ))
    await client.open_session(SESSION)
    loop = asyncio.get_running_loop()
    waiting: dict[str, asyncio.Future[ToolCallStatus]] = {}

    async def listen() -> None:
        async for event in client.events(SESSION, past=False):
            future = waiting.pop(event.tool_call_id, None)
            if future is not None:
                future.set_result(event.status)

    listener = asyncio.create_task(listen())
    await asyncio.sleep(0.05)
    counter = iter(range(warmup + calls))
    latencies: list[float] = []

    async def asker(measure: bool, limit: int) -> None:
        for number in counter:
            if number >= limit:
                return
            call_id = f"c{number}"
            future: asyncio.Future[ToolCallStatus] = loop.create_future()
            waiting[call_id] = future
            started = time.perf_counter()
            await client.ask(SESSION, "t", call_id, "lookup_order", "{}")
            status = await future
            if status is not ToolCallStatus.SUCCEEDED:
                raise RuntimeError(f"{call_id} recorded {status.value}")
            if measure:
                latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(asker(False, warmup) for _ in range(concurrency)))
    counter = iter(range(warmup, warmup + calls))
    before = await client.stats()
    processes = _processes(cluster)
    cpu_before = _cpu(processes)
    started = time.perf_counter()
    await asyncio.gather(*(asker(True, warmup + calls) for _ in range(concurrency)))
    seconds = time.perf_counter() - started
    cpu_after = _cpu(processes)
    after = await client.stats()
    listener.cancel()
    await client.close()
    latencies.sort()
    commits = after["commits"] - before["commits"]
    entries = after["committed_entries"] - before["committed_entries"]
    return Throughput(calls, seconds, calls / seconds,
                      statistics.median(latencies) * 1000,
                      latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
                      latencies[-1] * 1000, commits, entries, entries / max(1, commits),
                      {role: round((cpu_after[role] - cpu_before[role]) * 1000 / calls, 4)
                       for role in cpu_after if role in cpu_before})


async def _detect_once(cluster: Cluster, client: AsyncClient, number: int) -> float:
    stream = client.events(SESSION, past=False)
    call_id = f"kill-{number}"
    key = await client.ask(SESSION, "k", call_id, "cancel_order", {"duration": 600})
    ledger = cluster.ledger_client()
    try:
        while not ledger.runs(key):
            await asyncio.sleep(0.01)
        run = ledger.runs(key)[0]
    finally:
        ledger.close()
    victim = cluster.worker_of(run.worker)
    cluster.kill(victim)
    killed = time.monotonic()
    async for event in stream:
        if event.tool_call_id == call_id:
            if event.status is not ToolCallStatus.OUTCOME_UNKNOWN:
                raise RuntimeError(f"{call_id} recorded {event.status.value}")
            break
    seconds = time.monotonic() - killed
    await stream.aclose()
    cluster.workers.remove(victim)
    cluster.start_worker()
    return seconds


async def _detection(cluster: Cluster, kills: int, interval: float) -> Detection:
    client = cluster.async_client()
    await client.set_policy("cancel_order", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE,
                                                       requires_approval=False))
    seconds = [await _detect_once(cluster, client, n) for n in range(kills)]
    await client.close()
    config = cluster.config
    target = config.heartbeat_timeout + 1.0
    worst = max(seconds)
    return Detection(config.heartbeat_timeout, config.lease, interval, seconds, worst, target,
                     worst <= target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--slots", type=int, default=8,
                        help="tool runs at a time per worker process (default 8)")
    parser.add_argument("--kills", type=int, default=3, help="killed workers to time (>= 1)")
    parser.add_argument("--heartbeat-timeout", type=float, default=2.0)
    parser.add_argument("--lease", type=float, default=1.0)
    parser.add_argument("--engine", choices=("reference", "temporal", "pydantic-ai", "dbos",
                                             "pydantic-ai-dbos", "restate"),
                        default="reference",
                        help="temporal, pydantic-ai, dbos, pydantic-ai-dbos, restate: also "
                        "run that engine's mapping and compare")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if min(args.calls, args.concurrency, args.slots, args.kills) < 1:
        parser.error("--calls, --concurrency, --slots and --kills must be at least 1")
    config = ExecutorConfig(heartbeat_timeout=args.heartbeat_timeout, lease=args.lease,
                            run_timeout=600.0, queue_timeout=600.0)
    interval = args.lease / 4
    warmup = min(500, max(50, args.calls // 10))
    with Cluster(config=config, workers=WORKERS, slots=args.slots) as cluster:
        speed = asyncio.run(_throughput(cluster, args.calls, args.concurrency, warmup))
        detection = asyncio.run(_detection(cluster, args.kills, interval))
    command = (f"python benchmarks/runtime.py --calls {args.calls} --concurrency "
               f"{args.concurrency} --slots {args.slots} --kills {args.kills} "
               f"--heartbeat-timeout {args.heartbeat_timeout:g} --lease {args.lease:g}"
               f"{'' if args.engine == 'reference' else ' --engine ' + args.engine}")
    temporal = None
    if args.engine in ("temporal", "pydantic-ai"):
        from benchmarks import temporal_engine

        temporal = temporal_engine.run(args.calls, args.concurrency, args.slots, args.kills,
                                       config, pydantic_ai=args.engine == "pydantic-ai")
    dbos = None
    dbos_label = "DBOS mapping (steps"
    if args.engine == "dbos":
        from benchmarks import dbos_engine

        dbos = dbos_engine.run(args.calls, args.concurrency, args.kills, config)
    if args.engine == "pydantic-ai-dbos":
        from atmostonce.engines.pydantic_ai import dbos_steps
        from benchmarks import dbos_engine

        dbos_label = "Pydantic AI on DBOS (dbos_steps"
        dbos = dbos_engine.run(args.calls, args.concurrency, args.kills, config, dbos_steps)
    restate = None
    if args.engine == "restate":
        from benchmarks import restate_engine

        restate = restate_engine.run(args.calls, args.concurrency, config)
    if args.json:
        report: dict[str, object] = {
            "workers": WORKERS, "slots": args.slots, "concurrency": args.concurrency,
            "cpus": os.cpu_count(), "throughput": asdict(speed),
            "detection": asdict(detection), "command": command}
        if temporal is not None:
            t_speed, t_detection = temporal
            report[args.engine] = {"throughput": asdict(t_speed),
                                  "detection": asdict(t_detection),
                                  "ratios": _ratios(speed, detection, t_speed, t_detection)}
        if dbos is not None:
            d_speed, d_recovery = dbos
            report[args.engine] = {"throughput": asdict(d_speed), "recovery": asdict(d_recovery),
                              "ratios": _speed_ratios(speed, d_speed)}
        if restate is not None:
            report["restate"] = {"throughput": asdict(restate),
                                 "detection": None, "ratios": _speed_ratios(speed, restate)}
        print(json.dumps(report, indent=2))
        return 0
    print(f"atmostonce runtime on loopback: {WORKERS} worker processes x {args.slots} slots, "
          f"{args.concurrency} calls in flight, journal fsynced (WAL, synchronous=FULL, group "
          f"commit), {os.cpu_count()} CPUs")
    print(f"  end to end:  {speed.calls} read calls in {speed.seconds:.2f} s = "
          f"{speed.calls_per_second:,.0f} tool calls/s (target >= 1,000)")
    print(f"  latency:     p50 {speed.p50_ms:.1f} ms, p99 {speed.p99_ms:.1f} ms, max "
          f"{speed.max_ms:.1f} ms (ask sent -> tool_call_finished received)")
    print(f"  journal:     {speed.commits} fsynced commits, {speed.entries_per_commit:.1f} "
          "entries per commit")
    print(f"  CPU:         {_cpu_line(speed.cpu_ms_per_call)}")
    shown = ", ".join(f"{s:.2f}" for s in detection.seconds)
    print(f"  detection:   killed worker -> outcome_unknown in {shown} s (heartbeat timeout "
          f"{detection.heartbeat_timeout:g} s, heartbeats every {detection.heartbeat_interval:g}"
          f" s; target <= {detection.target:g} s: {'met' if detection.met else 'MISSED'})")
    if temporal is not None:
        _print_temporal(speed, detection, *temporal,
                        "Pydantic AI on Temporal, recommended" if args.engine == "pydantic-ai"
                        else "Temporal mapping")
    if dbos is not None:
        _print_dbos(speed, *dbos, dbos_label)
    if restate is not None:
        _print_restate(speed, restate)
    print(f"reproduce: {command}")
    return 0


def _cpu_line(per_call: dict[str, float]) -> str:
    if not per_call:
        return "not measured (no /proc on this system)"
    shown = ", ".join(f"{role} {ms:.3f}" for role, ms in per_call.items())
    return f"{sum(per_call.values()):.3f} ms per call in all ({shown})"


def _ratios(speed: Throughput, detection: Detection, t_speed: temporal_engine.Speed,
            t_detection: temporal_engine.Detection) -> dict[str, float]:
    """Temporal's figures over the runtime's: below 1 for calls/s means slower, above 1 for a
    latency or a detection time means longer."""
    return {"calls_per_second": t_speed.calls_per_second / speed.calls_per_second,
            "p50": t_speed.p50_ms / speed.p50_ms, "p99": t_speed.p99_ms / speed.p99_ms,
            "detection_worst": t_detection.worst / detection.worst}


def _print_temporal(speed: Throughput, detection: Detection, t_speed: temporal_engine.Speed,
                    t_detection: temporal_engine.Detection, label: str) -> None:
    ratios = _ratios(speed, detection, t_speed, t_detection)
    shown = ", ".join(f"{s:.2f}" for s in t_detection.seconds)
    workers = (f"{t_speed.workers} tool workers x the same slots"
               if label.startswith("Temporal") else
               f"{t_speed.workers} workers running the workflows and activities")
    print(f"{label} (dev server on SQLite, {workers}, {t_speed.sessions} sessions, events "
          f"polled every "
          f"{t_speed.poll_ms:g} ms), same run:")
    print(f"  end to end:  {t_speed.calls} read calls in {t_speed.seconds:.2f} s = "
          f"{t_speed.calls_per_second:,.1f} tool calls/s (x{ratios['calls_per_second']:.3f} "
          "the runtime's)")
    print(f"  latency:     p50 {t_speed.p50_ms:.1f} ms (x{ratios['p50']:.1f}), p99 "
          f"{t_speed.p99_ms:.1f} ms (x{ratios['p99']:.1f}), max {t_speed.max_ms:.1f} ms")
    print(f"  detection:   killed worker -> outcome_unknown in {shown} s (heartbeat timeout "
          f"{t_detection.heartbeat_timeout:g} s; worst x{ratios['detection_worst']:.2f} the "
          "runtime's)")


def _speed_ratios(speed: Throughput, other: dbos_engine.Speed | restate_engine.Speed
                  ) -> dict[str, float]:
    """An engine's throughput and latency over the runtime's (see `_ratios`); DBOS's and
    Restate's kill measures get none."""
    return {"calls_per_second": other.calls_per_second / speed.calls_per_second,
            "p50": other.p50_ms / speed.p50_ms, "p99": other.p99_ms / speed.p99_ms}


def _print_dbos(speed: Throughput, d_speed: dbos_engine.Speed,
                recovery: dbos_engine.Recovery, label: str) -> None:
    ratios = _speed_ratios(speed, d_speed)
    shown = ", ".join(f"{s:.2f}" for s in recovery.seconds)
    print(f"{label}, SQLite system database, {d_speed.workers} application "
          f"processes, {d_speed.sessions} sessions, events polled every {d_speed.poll_ms:g} "
          "ms), same run:")
    print(f"  end to end:  {d_speed.calls} read calls in {d_speed.seconds:.2f} s = "
          f"{d_speed.calls_per_second:,.1f} tool calls/s (x{ratios['calls_per_second']:.3f} "
          "the runtime's)")
    print(f"  latency:     p50 {d_speed.p50_ms:.1f} ms (x{ratios['p50']:.1f}), p99 "
          f"{d_speed.p99_ms:.1f} ms (x{ratios['p99']:.1f}), max {d_speed.max_ms:.1f} ms")
    print(f"  recovery:    killed process -> record after DBOS ran the step again in {shown} s "
          "(no outcome_unknown: not comparable with detection)")



def _print_restate(speed: Throughput, r_speed: restate_engine.Speed) -> None:
    ratios = _speed_ratios(speed, r_speed)
    print(f"Restate mapping (restate-server, {r_speed.workers} service workers, "
          f"{r_speed.sessions} sessions, events polled every {r_speed.poll_ms:g} ms), same run:")
    print(f"  end to end:  {r_speed.calls} read calls in {r_speed.seconds:.2f} s = "
          f"{r_speed.calls_per_second:,.1f} tool calls/s (x{ratios['calls_per_second']:.3f} "
          "the runtime's)")
    print(f"  latency:     p50 {r_speed.p50_ms:.1f} ms (x{ratios['p50']:.1f}), p99 "
          f"{r_speed.p99_ms:.1f} ms (x{ratios['p99']:.1f}), max {r_speed.max_ms:.1f} ms")
    print("  detection:   not measured: Restate runs a killed worker's call again, it never "
          "records outcome_unknown (docs/engines.md, R-1)")


if __name__ == "__main__":
    sys.exit(main())
