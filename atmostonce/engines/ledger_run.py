"""One run of a demo tool at an engine's process that gives runs no lease (LangGraph, DBOS,
Restate, Pydantic AI): the tool's context (`atmostonce.runtime.tools.ToolContext`), whose writes
carry the call's key to the effect ledger and no deadline."""

from __future__ import annotations

import asyncio

from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.tools import Fenced, WriteResult


class LedgerRun:
    """The run `attempt` of the call `key`'s `tool` at the process named `worker`."""

    def __init__(self, ledger: AsyncLedger, worker: str, attempt: str, key: str,
                 tool: str) -> None:
        self.ledger = ledger
        self.worker = worker
        self.attempt = attempt
        self.key = key
        self.tool = tool
        self.cancelled = asyncio.Event()
        """Set when the engine stops the run; never set where it cannot."""

    async def start(self) -> None:
        """Put the run's start on record at the ledger, before the tool runs; SpecError or
        OSError when the ledger did not record it."""
        await self.ledger.request({"op": "run_started", "worker": self.worker,
                                   "attempt": self.attempt, "key": self.key, "tool": self.tool})

    async def write(self, payload: str) -> WriteResult:
        """The tool's write with the call's key and no lease's deadline."""
        answer = await self.ledger.request({
            "op": "write", "worker": self.worker, "attempt": self.attempt, "key": self.key,
            "tool": self.tool, "payload": payload, "deadline": None})
        if answer.get("fenced"):
            raise Fenced(self.attempt)
        return WriteResult(bool(answer.get("applied")), int(answer.get("count", 0)))
