"""Pydantic AI on DBOS: the DBOS application (`engines.dbos.app`) with each turn of a session run
as one run of a Pydantic AI `Agent` with the `DBOSDurability` capability, as Pydantic AI's DBOS
guide builds it: `agent.run()` inside the team's own `@DBOS.workflow`, the agent created before
`DBOS.launch()`, model requests as DBOS steps (the capability's), a scripted `FunctionModel`
(`scripted`) in place of the LLM.

The workflow is the DBOS app's (one per session, same queue, same `records` event, same inbox),
so the DBOS adapter, its session API and its server log judge it unchanged. A turn is one agent
run; a call whose policy kept at ask time wants approval is deferred (`ApprovalRequiredToolset`),
the run ends with `DeferredToolRequests`, the workflow waits for the inbox's decision with
`DBOS.recv` until the deadline, and resumes the run with `DeferredToolResults` (True, or
`ToolDenied` with the rejection's text). Each call's record is read from its tool return
(`mapping.record_of`), as for Pydantic AI on Temporal, and kept in the `records` event once the
run ends: records come per model response. A tool function notes its result as delivered as
soon as it has it: under `dbos_steps` that is when DBOS has checkpointed the step's output, which
a recovery replays; a result it never keeps is left out of the server log (`noted_log`).

The tools are the demo tools as plain functions of a `FunctionToolset`. How their bodies run is
the variant's:

- `dbos_defaults`: as given. Pydantic AI's DBOS integration wraps model requests and MCP calls
  in steps, not custom tool functions, so a tool runs as workflow code: every recovery of the
  workflow runs it again (the DBOS finding D-2).
- `dbos_steps`: each tool's body in a `@DBOS.step` (the DBOS app's `tool_once`/`tool_retried`),
  what DBOS's and Pydantic AI's guides ask for, with the agent's tool calls run one at a time
  (`parallel_execution_mode='sequential'`): DBOS matches a recovered workflow's steps to its
  checkpoints by the order they start, so the tool steps of one model response start in the
  same order on every recovery.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbos import DBOS
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    FunctionToolset,
    RunContext,
    ToolDenied,
    ToolFailed,
)
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.exceptions import AgentRunError, UserError
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import ToolDefinition

from atmostonce.engines.appstore import CallRow
from atmostonce.engines.dbos import mapping as dbos_mapping
from atmostonce.engines.dbos.app import (
    ASK,
    IDLE,
    PORTABLE,
    RECORDS,
    WORKFLOW,
    decided,
    note_delivering,
    rejection,
    tool_runner,
    turn_due,
)
from atmostonce.engines.dbos.app import (
    RunContext as AppContext,
)
from atmostonce.engines.dbos.mapping import CallRecord, ToolRun, Variant
from atmostonce.engines.pydantic_ai import mapping
from atmostonce.engines.pydantic_ai.scripted import scripted
from atmostonce.runtime.tools import TOOLS
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import Record
from atmostonce.spec.session import tool_result_text

WORKER = "atmostonce.engines.pydantic_ai.dbos_worker"
"""The module the application processes of these variants run."""
AGENT = "atmostonce_dbos"
"""The agent's name, by which `DBOSDurability` names its steps."""
VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("dbos_defaults", ToolRun.WORKFLOW, WORKER,
            "Pydantic AI's DBOSDurability, tool functions as given"),
    Variant("dbos_steps", ToolRun.STEP, WORKER,
            "Pydantic AI's DBOSDurability, each tool's body in a @DBOS.step"),
)}
"""Each variant by the name its factory has in `atmostonce.engines.pydantic_ai`."""


@dataclass
class TurnDeps:
    """The deps of a turn's agent run: its calls by tool call id, and the attempt whose end
    each call's tool return tells (what the server log names a delivered result by)."""

    calls: dict[str, CallRow]
    attempts: dict[str, str] = field(default_factory=dict)


Delivered = Callable[[str, CallRecord], None]
"""What a tool function tells once it has its call's record: the key and the record."""


def _tool(name: str, run: Callable[[CallRow], CallRecord], delivered: Delivered
          ) -> Callable[..., str]:
    def tool(run_ctx: RunContext[TurnDeps], order_id: str | None = None, n: int | None = None,
             duration: float | None = None, write_at: float | None = None,
             fail: bool | None = None, gate: str | None = None) -> str:
        call = run_ctx.deps.calls.get(run_ctx.tool_call_id or "")
        if call is None:
            raise ToolFailed(mapping.tool_failed_text(
                f"no call {run_ctx.tool_call_id!r} in the turn"))
        arguments = mapping.tool_arguments({"order_id": order_id, "n": n, "duration": duration,
                                            "write_at": write_at, "fail": fail, "gate": gate})
        record = run(dataclasses.replace(call, arguments=arguments))
        run_ctx.deps.attempts[call.call_id] = record.attempt
        delivered(call.key, record)
        if record.record is Record.SUCCEEDED:
            return record.text
        raise ToolFailed(record.text)

    tool.__name__ = name
    return tool


def needs_approval(ctx: RunContext[TurnDeps], tool_def: ToolDefinition,
                   arguments: dict[str, Any]) -> bool:
    """Whether the call's policy kept at ask time wants approval."""
    call = ctx.deps.calls.get(ctx.tool_call_id or "")
    return call is not None and call.requires_approval


def agent_of(variant: Variant, run: Callable[[CallRow], CallRecord], delivered: Delivered
             ) -> Agent[TurnDeps, str | DeferredToolRequests]:
    """The variant's agent (see the module docstring); create it before `DBOS.launch()`."""
    tools: FunctionToolset[TurnDeps] = FunctionToolset(id=mapping.TOOLSET_ID)
    for name, tool in TOOLS.items():
        tools.add_function(_tool(name, run, delivered), takes_ctx=True, name=name,
                           description=tool.summary)
    durability: DBOSDurability[TurnDeps] = (
        DBOSDurability(parallel_execution_mode="sequential")
        if variant.tool_run is ToolRun.STEP else DBOSDurability())
    return Agent(FunctionModel(scripted, model_name="atmostonce-scripted"), name=AGENT,
                 deps_type=TurnDeps, output_type=[str, DeferredToolRequests],
                 toolsets=[tools.approval_required(needs_approval)],
                 capabilities=[durability])


def records_of(turn: list[CallRow], messages: list[ModelMessage],
               deps: TurnDeps) -> dict[str, CallRecord]:
    """The record of each of the turn's calls whose tool return `messages` hold."""
    by_id = {c.call_id: c for c in turn}
    found: dict[str, CallRecord] = {}
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            call = by_id.get(getattr(part, "tool_call_id", ""))
            if call is None:
                continue
            if isinstance(part, ToolReturnPart):
                text = (part.content if isinstance(part.content, str)
                        else part.model_response_str())
                outcome = mapping.record_of(part.outcome, text)
                output = text if part.outcome == mapping.SUCCESS else ""
            else:
                outcome = mapping.record_of(mapping.FAILED, str(part))
                output = ""
            found[call.call_id] = CallRecord(outcome.record, outcome.error,
                                             tool_result_text(outcome, output),
                                             deps.attempts.get(call.call_id, ""))
    return found


def register(ctx: AppContext, variant: Variant, config: ExecutorConfig) -> None:
    """Register the session workflow, its steps and the agent with DBOS (before
    `DBOS.launch`)."""
    agent = agent_of(variant, tool_runner(ctx, variant, config),
                     lambda key, record: note_delivering(ctx, key, record))

    @DBOS.step(name="model_turn")
    async def model_turn(session_id: str, handled: list[str]) -> list[CallRow]:
        """The calls of the earliest turn not handled yet, once due (`turn_due`)."""
        while True:
            turn, wait = turn_due(ctx, session_id, handled)
            if wait <= 0:
                return turn
            await asyncio.sleep(wait)

    @DBOS.step(name="decision")
    async def decision(key: str, session_id: str) -> tuple[str, float]:
        return decided(ctx, key, session_id)

    async def approval(call: CallRow) -> bool | ToolDenied:
        """True once the call is approved; its denial once rejected or past its deadline."""
        while True:
            state, left = await decision(call.key, call.thread)
            if state == ApprovalState.APPROVED.value:
                return True
            refused = rejection(state)
            if refused is not None:
                return ToolDenied(refused.error)
            await DBOS.recv_async(call.key, timeout_seconds=max(0.01, left))

    async def run_turn(turn: list[CallRow]) -> dict[str, CallRecord]:
        deps = TurnDeps({c.call_id: c for c in turn})
        prompt = mapping.script([(c.call_id, c.tool, c.arguments) for c in turn])
        found: dict[str, CallRecord] = {}
        try:
            result = await agent.run(prompt, deps=deps)
            found |= records_of(turn, result.new_messages(), deps)
            while isinstance(result.output, DeferredToolRequests):
                answers = DeferredToolResults()
                for part in result.output.approvals:
                    answers.approvals[part.tool_call_id] = await approval(
                        deps.calls[part.tool_call_id])
                result = await agent.run(deps=deps, message_history=result.all_messages(),
                                         deferred_tool_results=answers)
                found |= records_of(turn, result.new_messages(), deps)
        except (AgentRunError, UserError):
            pass
        for call in turn:
            if call.call_id not in found:
                found[call.call_id] = dbos_mapping.exhausted(
                    call.effect is EffectClass.READ, deps.attempts.get(call.call_id, ""))
        return found

    @DBOS.workflow(name=WORKFLOW)
    async def session(session_id: str) -> None:
        records: dict[str, dict[str, str]] = {}
        handled: list[str] = []
        while True:
            turn = await model_turn(session_id, handled)
            if not turn:
                await DBOS.recv_async(ASK, timeout_seconds=IDLE)
                continue
            handled += [c.call_id for c in turn]
            records |= {k: r.as_json() for k, r in (await run_turn(turn)).items()}
            await DBOS.set_event_async(RECORDS, records, serialization_type=PORTABLE)
