"""What runs inside a worker process's `ctx.run` closures: one attempt of a tool call, and the
worker's notes of what the server handed it (its events file).

`run_attempt` does what the runtime's worker does around a run of a demo tool
(`atmostonce.runtime.tools`), the effect ledger being the ground truth: it notes the hand-out
in the events file first (Restate's journal keeps one `Run` command per `ctx.run`, however
often the closure ran), puts the run's start on record at the ledger, runs the tool, which
writes with the call's idempotency key (TC-KEY-1), and logs the run's end. A failure the tool
reports is returned as a value, so Restate does not retry it (D-3); an exception (the ledger
refused the run's start) is what Restate retries within the run's attempts.

The process state (`Worker`) is set once by `worker.main` before the service serves.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atmostonce.engines.ledger_run import LedgerRun
from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.tools import Behaviour, run_tool


class EventsFile:
    """The worker's events file: each line written whole with one `write`, so a SIGKILL
    leaves every line before it intact."""

    def __init__(self, path: Path, worker: str) -> None:
        self.worker = worker
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def note(self, kind: str, **fields: object) -> None:
        line = json.dumps({"type": kind, "at": time.monotonic(), "worker": self.worker,
                           **fields}, separators=(",", ":"))
        os.write(self._fd, (line + "\n").encode())


@dataclass
class Worker:
    """The worker process's ledger connection, events file and tools."""

    name: str
    ledger: AsyncLedger
    events: EventsFile
    table: dict[str, Behaviour]
    runs: dict[str, str] = field(default_factory=dict)
    """The runs going at this worker: attempt -> key."""
    _count: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def next_attempt(self, key: str) -> str:
        return f"{key}#{self.name}.{next(self._count)}"


_WORKER: list[Worker] = []


def install(worker: Worker) -> None:
    _WORKER[:] = [worker]


def current() -> Worker:
    if not _WORKER:
        raise RuntimeError("this process serves no worker: atmostonce.engines.restate.worker "
                           "sets one up before serving")
    return _WORKER[0]


async def run_attempt(key: str, tool: str, arguments: str) -> dict[str, Any]:
    """One attempt of a call in a `ctx.run` closure (see the module docstring)."""
    worker = current()
    attempt = worker.next_attempt(key)
    worker.events.note("started", attempt=attempt, key=key, tool=tool)
    run = LedgerRun(worker.ledger, worker.name, attempt, key, tool)
    await run.start()
    worker.runs[attempt] = key
    try:
        ok, output = await run_tool(tool, arguments, run, worker.table)
    except asyncio.CancelledError:
        worker.runs.pop(attempt, None)
        worker.ledger.send({"op": "run_ended", "worker": worker.name, "attempt": attempt,
                            "end": "stopped", "output": "stopped: the SDK cancelled the "
                            "closure when its invocation's stream went"})
        worker.events.note("stopped", attempt=attempt)
        raise
    except Exception as error:  # a tool that raises reports a failure (D-3)
        ok, output = False, f"{tool} raised {type(error).__name__}: {error}"
    worker.runs.pop(attempt, None)
    worker.ledger.send({"op": "run_ended", "worker": worker.name, "attempt": attempt,
                        "end": "returned" if ok else "tool_failed", "output": output})
    worker.events.note("ended", attempt=attempt, ok=ok)
    return {"ok": ok, "output": output}


async def note(kind: str, key: str, approve: bool | None = None, wall: float | None = None
               ) -> bool:
    """A note of the approval's course in the events file: the deadline's timer started or
    fired, an answer taken; `wall`, when given, is the moment it happened by the handler's
    journaled clock (`ctx.time()`), which the server log prefers to the note's own."""
    current().events.note(kind, key=key, approve=approve, wall=wall)
    return True
