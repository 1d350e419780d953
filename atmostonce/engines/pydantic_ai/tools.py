"""The agent's tools: the four demo tools (`atmostonce.runtime.tools`) as the functions of one
Pydantic AI `FunctionToolset`, which `TemporalDurability` runs as activities on the worker
processes.

A tool function's run is one attempt of its call: Temporal's attempt number names it
(`{key}#{attempt}`, the name the Temporal mapping's server log reads). It notes the hand-out
in its worker's events file before anything else (Temporal's history keeps only the last
attempt's STARTED event), tells the effect ledger the run starts, runs the tool, which writes
with the call's idempotency key `{session}/{turn}/{tool_call_id}` from the run's deps
(TC-KEY-1), tells the ledger how it ended, and returns the tool's output, or raises
`ToolFailed` for a failure the tool reported (D-3), which Pydantic AI hands the model as a
failed tool return without retrying. A run Temporal cancels (its attempt timed out, or the
worker stops) ends at once, reported to the ledger as stopped. Pydantic AI gives a run no lease:
its writes carry no deadline.

The process's ledger connection and events file are set once by the worker (`serve`), before
it polls: Pydantic AI's tools are module-level functions, so they reach their process's state
here.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import FunctionToolset, RunContext, ToolFailed
from pydantic_ai.tools import ToolPrepareFunc
from temporalio import activity

from atmostonce.engines.ledger_run import LedgerRun
from atmostonce.engines.pydantic_ai import mapping
from atmostonce.engines.temporal.worker import EventsFile
from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.tools import TOOLS, Behaviour, run_tool
from atmostonce.spec.errors import SpecError

STOP_GRACE = 0.3
"""Seconds the ledger gets to hear of runs stopped with the worker."""


@dataclass
class ToolProcess:
    """What a worker process gives its tool functions."""

    name: str
    ledger: AsyncLedger
    events: EventsFile
    table: dict[str, Behaviour]
    runs: dict[str, LedgerRun] = field(default_factory=dict)
    """The runs going at this process, by attempt."""

    async def attempt(self, plan: mapping.CallPlan, arguments: str) -> str:
        """One attempt of the call `plan` (see the module docstring)."""
        info = activity.info()
        attempt = f"{plan.key}#{info.attempt}"
        self.events.note("started", attempt=attempt, key=plan.key, tool=plan.tool,
                         number=info.attempt, workflow=info.workflow_id)
        run = LedgerRun(self.ledger, self.name, attempt, plan.key, plan.tool)
        try:
            await run.start()
        except SpecError as error:
            self.events.note("ended", attempt=attempt, ok=False)
            raise ToolFailed(mapping.tool_failed_text(
                f"{plan.tool} did not run: the effect ledger did not record its start "
                f"({error})")) from None
        self.runs[attempt] = run
        try:
            ok, output = await run_tool(plan.tool, arguments, run, self.table)
        except BaseException:  # Temporal cancelled the attempt: the run ends here, unfinished
            self._ended(run, "stopped", "stopped: Temporal cancelled the activity", None)
            raise
        self._ended(run, "returned" if ok else "tool_failed", output, ok)
        if not ok:
            raise ToolFailed(mapping.tool_failed_text(output))
        return output

    def _ended(self, run: LedgerRun, end: str, output: str, ok: bool | None) -> None:
        self.runs.pop(run.attempt, None)
        self.ledger.send({"op": "run_ended", "worker": self.name, "attempt": run.attempt,
                          "end": end, "output": output})
        self.events.note("ended", attempt=run.attempt, ok=ok)

    async def stopped(self) -> None:
        """The worker stops: tell the ledger of every run still going."""
        notices = [self.ledger.request({
            "op": "run_ended", "worker": self.name, "attempt": run.attempt, "end": "stopped",
            "output": "stopped by its worker: the worker was told to stop"})
            for run in list(self.runs.values())]
        if notices:
            with contextlib.suppress(TimeoutError, OSError, SpecError):
                await asyncio.wait_for(asyncio.gather(*notices), STOP_GRACE)


_PROCESS: list[ToolProcess] = []


def serve(process: ToolProcess) -> None:
    """Give this process's tool functions their state (once, before the worker polls)."""
    _PROCESS[:] = [process]


def _process() -> ToolProcess:
    if not _PROCESS:
        raise SpecError("a tool ran in a process whose worker did not set it up")
    return _PROCESS[0]


def _tool(name: str) -> Any:
    async def run(ctx: RunContext[mapping.TurnDeps], order_id: str | None = None,
                  n: int | None = None, duration: float | None = None,
                  write_at: float | None = None, fail: bool | None = None,
                  gate: str | None = None) -> str:
        plan = ctx.deps.calls.get(ctx.tool_call_id or "")
        if plan is None:
            raise ToolFailed(mapping.tool_failed_text(
                f"no call {ctx.tool_call_id!r} in turn {ctx.deps.turn_id!r}"))
        return await _process().attempt(plan, mapping.tool_arguments({
            "order_id": order_id, "n": n, "duration": duration,
            "write_at": write_at, "fail": fail, "gate": gate}))

    run.__name__ = name
    return run


def toolset(prepare: ToolPrepareFunc[mapping.TurnDeps] | None = None
            ) -> FunctionToolset[mapping.TurnDeps]:
    """The four demo tools, one toolset (its id names Pydantic AI's activities), each with
    `prepare` as its prepare function."""
    tools: FunctionToolset[mapping.TurnDeps] = FunctionToolset(id=mapping.TOOLSET_ID)
    for name, tool in TOOLS.items():
        tools.add_function(_tool(name), takes_ctx=True, name=name, description=tool.summary,
                           prepare=prepare)
    return tools
