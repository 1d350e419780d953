"""The seam of every variant: one small function (a kit, picked by the variant's `kit` from
`kits.KITS`) builds the tool functions the graph runs and the approval step that holds them
back, from what an agent process gives them (`RunContext`). The guarded variant swaps this
function (`guarded.guard_kit`) and keeps the rest of the adapter.

The page's kits wrap each of the four demo tools (`atmostonce.runtime.tools`) in a LangChain
tool whose run is one attempt of the call (`RunContext.attempt`): note the hand-out, tell the
effect ledger the run starts, run the tool, which writes with the call's idempotency key
`{thread}/{turn}/{tool_call_id}` (TC-KEY-1), tell the ledger how it ended, and return the
call's `ToolMessage` (`mapping` says its text), carrying the attempt in its artifact, which the
model never reads. A failure outside the tool (the ledger out of reach) after the run began is
raised for a call with retries, so LangGraph's retries take it, and is outcome_unknown for a
single-attempt call.

- `interrupt` (tool_node): a call that waits for approval calls `interrupt()` in its tool
  function before it runs, as LangGraph's documentation shows; the resume value says approve,
  or reject and why.
- `hitl` (create_agent): `HumanInTheLoopMiddleware` asks once per model message for every call
  whose kept policy wants approval (its `when`), before any of the message's calls runs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Protocol

from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain.agents.middleware.human_in_the_loop import InterruptOnConfig
from langchain.agents.middleware.types import ToolCallRequest
from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.config import get_config
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict

from atmostonce.engines.appstore import ApprovalRow, CallRow
from atmostonce.engines.langgraph import mapping
from atmostonce.engines.langgraph.store import ThreadedStore
from atmostonce.engines.ledger_run import LedgerRun
from atmostonce.engines.notes import Notes
from atmostonce.guard import Guard
from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.tools import TOOLS, Behaviour, Fenced, run_tool
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import RejectReason, reject_text

APPROVE: Final = "approve"
REJECT: Final = "reject"
_REASON = {ApprovalState.REJECTED: RejectReason.PERSON,
           ApprovalState.EXPIRED: RejectReason.DEADLINE}


class ToolInfrastructureError(Exception):
    """A run of a call with retries failed outside the tool, after it began: the tool may have
    run. LangGraph's retries take it (`retryable`); once they run out, `read` decides the
    record (`mapping.exhausted`)."""

    def __init__(self, message: str, read: bool) -> None:
        super().__init__(message)
        self.read = read


def retryable(error: Exception) -> bool:
    """What the variants' retries retry: a failure outside the tool of a call with retries."""
    return isinstance(error, ToolInfrastructureError)


@dataclass
class RunContext:
    """What an agent process gives its tool functions."""

    worker: str
    """This process's worker name, as the ledger knows it."""
    store: ThreadedStore
    ledger: AsyncLedger
    notes: Notes
    table: Mapping[str, Behaviour]
    runs: Counter[str] = field(default_factory=Counter)
    """Runs of each call at this process, to number its attempts."""
    guard: Guard | None = None
    """The guard over the shared journal, for a guarded variant's kit."""

    def call(self, config: RunnableConfig, tool_call_id: str) -> CallRow:
        """The call the model asked under `tool_call_id` in the config's thread."""
        thread = str(config.get("configurable", {}).get("thread_id", ""))
        found = self.store.call(thread, tool_call_id)
        if found is None:
            raise SpecError(f"no call {tool_call_id!r} was asked in thread {thread!r}")
        return found

    async def execute(self, call: CallRow, attempt: str, arguments: Mapping[str, Any],
                      hand_out: bool = True) -> tuple[bool, str]:
        """Run the tool as `attempt` of `call`: whether it returned and its output. With
        `hand_out`, the run is noted as the attempt's hand-out first (LangGraph hands nothing
        out); a guarded run's hand-out is the intent in the guard's journal instead. A failure
        outside the tool after the run began is a `ToolInfrastructureError`."""
        if hand_out:
            self.notes.note("started", attempt=attempt, key=call.key, tool=call.tool)
        run = LedgerRun(self.ledger, self.worker, attempt, call.key, call.tool)
        try:
            await run.start()
            ok, output = await run_tool(call.tool, json.dumps(dict(arguments), sort_keys=True),
                                        run, self.table)
        except (SpecError, OSError, Fenced) as error:
            self.notes.note("ended", attempt=attempt, ok=None)
            raise ToolInfrastructureError(f"{call.tool}: {error}",
                                          read=call.effect is EffectClass.READ) from None
        except BaseException:  # LangGraph cancelled the run: it ends here, unfinished
            self.ledger.send({"op": "run_ended", "worker": self.worker, "attempt": attempt,
                              "end": "stopped", "output": "cancelled by the graph"})
            self.notes.note("ended", attempt=attempt, ok=None)
            raise
        self.ledger.send({"op": "run_ended", "worker": self.worker, "attempt": attempt,
                          "end": "returned" if ok else "tool_failed", "output": output})
        self.notes.note("ended", attempt=attempt, ok=ok)
        return ok, output

    async def attempt(self, call: CallRow, tool_call_id: str,
                      arguments: Mapping[str, Any]) -> ToolMessage:
        """One attempt of `call` at this process (see the module docstring)."""
        self.runs[call.key] += 1
        attempt = f"{call.key}#{self.worker}.{self.runs[call.key]}"
        try:
            ok, output = await self.execute(call, attempt, arguments)
        except ToolInfrastructureError:
            if call.retries_allowed:
                raise
            return self._message(call, tool_call_id, attempt, mapping.unknown())
        result = mapping.returned(output) if ok else mapping.tool_failed(output)
        return self._message(call, tool_call_id, attempt, result)

    def _message(self, call: CallRow, tool_call_id: str, attempt: str,
                 result: mapping.ToolResult) -> ToolMessage:
        return ToolMessage(content=result.text, status=result.status, name=call.tool,
                           tool_call_id=tool_call_id,
                           artifact={"attempt": attempt, "worker": self.worker, "key": call.key})


class ApprovalStep(Protocol):
    """How an agent process answers the graph's interrupts from the approval inbox."""

    def keys(self, value: Any) -> list[str]:
        """The calls an interrupt's value asks about."""
        ...

    def resume(self, value: Any, inbox: Mapping[str, ApprovalRow]) -> object | None:
        """The value to resume the interrupt with, or None while a call it needs is waiting."""
        ...


class Inbox(Protocol):
    """Where an agent process reads the answers to the graph's interrupts: the application's
    store, or the guard's journal."""

    def approvals(self, thread: str | None = None) -> dict[str, ApprovalRow]: ...

    def expire(self, keys: list[str]) -> list[str]: ...


@dataclass(frozen=True)
class ToolKit:
    """What a kit builds: the tools, the middleware `create_agent` adds, the approval step and
    its inbox, and whether the graph adds LangGraph's or LangChain's retries (a guard retries
    itself, counting attempts in its journal)."""

    tools: list[BaseTool]
    middleware: list[AgentMiddleware[Any, Any, Any]]
    approval: ApprovalStep
    inbox: Inbox
    retries: bool = True


Kit = Callable[[RunContext], ToolKit]


class DemoArguments(BaseModel):
    """A demo tool's arguments: whatever the model sent, and the call's id, which LangGraph
    injects."""

    model_config = ConfigDict(extra="allow")
    tool_call_id: Annotated[str, InjectedToolCallId]


ToolFunction = Callable[..., Any]


def demo_tool(name: str, function: ToolFunction) -> BaseTool:
    return StructuredTool.from_function(coroutine=function, name=name,
                                        description=TOOLS[name].summary,
                                        args_schema=DemoArguments)


# -- tool_node: interrupt() inside the tool ------------------------------------------------------


class InToolApproval:
    """The approval step of `interrupt_kit`: one interrupt per call, answered alone."""

    def keys(self, value: Any) -> list[str]:
        return [str(value["key"])]

    def resume(self, value: Any, inbox: Mapping[str, ApprovalRow]) -> object | None:
        row = inbox.get(str(value["key"]))
        if row is None or row.state is ApprovalState.WAITING:
            return None
        if row.state is ApprovalState.APPROVED:
            return {"type": APPROVE}
        return {"type": REJECT, "reason": _REASON[row.state].value}


def interrupt_kit(ctx: RunContext) -> ToolKit:
    """The page on a hand-built graph: approval by `interrupt()` in the tool function."""

    def function(name: str) -> ToolFunction:
        async def run(tool_call_id: str, config: RunnableConfig, **arguments: Any
                      ) -> ToolMessage:
            call = ctx.call(config, tool_call_id)
            if call.requires_approval:
                decision = interrupt({"key": call.key, "tool_call_id": tool_call_id,
                                      "tool": name, "args": arguments})
                if decision.get("type") != APPROVE:
                    result = mapping.rejected(RejectReason(decision.get("reason")))
                    return ToolMessage(content=result.text, status=result.status, name=name,
                                       tool_call_id=tool_call_id)
            return await ctx.attempt(call, tool_call_id, arguments)

        return run

    return ToolKit([demo_tool(name, function(name)) for name in TOOLS], [], InToolApproval(),
                   ctx.store)


# -- create_agent: HumanInTheLoopMiddleware --------------------------------------------------------


class MiddlewareApproval:
    """The approval step of `hitl_kit`: one interrupt per model message, answered once every
    call it asks about is decided. The middleware's description of each call is its key."""

    def keys(self, value: Any) -> list[str]:
        return [str(action["description"]) for action in value["action_requests"]]

    def resume(self, value: Any, inbox: Mapping[str, ApprovalRow]) -> object | None:
        rows = [inbox.get(key) for key in self.keys(value)]
        decisions: list[dict[str, str]] = []
        for row in rows:
            if row is None or row.state is ApprovalState.WAITING:
                return None
            if row.state is ApprovalState.APPROVED:
                decisions.append({"type": APPROVE})
            else:
                decisions.append({"type": REJECT, "message": reject_text(_REASON[row.state])})
        return {"decisions": decisions}


def hitl_kit(ctx: RunContext) -> ToolKit:
    """The page on `create_agent`: approval by `HumanInTheLoopMiddleware`, asked for the calls
    whose kept policy wants it."""

    def function(name: str) -> ToolFunction:
        async def run(tool_call_id: str, config: RunnableConfig, **arguments: Any
                      ) -> ToolMessage:
            return await ctx.attempt(ctx.call(config, tool_call_id), tool_call_id, arguments)

        return run

    def needs_approval(request: ToolCallRequest) -> bool:
        return ctx.call(get_config(), str(request.tool_call["id"])).requires_approval

    def describe(tool_call: ToolCall, state: Any, runtime: Any) -> str:
        return ctx.call(get_config(), str(tool_call["id"])).key

    gate: InterruptOnConfig = {"allowed_decisions": [APPROVE, REJECT], "when": needs_approval,
                               "description": describe}
    middleware = HumanInTheLoopMiddleware(dict.fromkeys(TOOLS, gate))
    return ToolKit([demo_tool(name, function(name)) for name in TOOLS], [middleware],
                   MiddlewareApproval(), ctx.store)


def exhausted_text(error: Exception) -> str:
    """The tool message of a call whose retries ran out (`ToolRetryMiddleware.on_failure`)."""
    read = isinstance(error, ToolInfrastructureError) and error.read
    return mapping.exhausted(read).text
