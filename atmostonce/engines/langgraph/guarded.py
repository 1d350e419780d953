"""The guarded variant (`langgraph:guarded`): `create_agent` with the guard's middleware
(`atmostonce.guard.langgraph.GuardMiddleware`) in place of `HumanInTheLoopMiddleware` and
`ToolRetryMiddleware`, everything else as in `create_agent`. The guard's journal is one SQLite
file beside the checkpoints that every agent process and the session API share, on the
monotonic clock the harness reads.

- the kit (`guard_kit`): the four demo tools, each run only by `Guard.run`, as the attempt the
  journal numbers (`{key}#{worker}.{n}`); the tool message carries that attempt, also when the
  guard gives back a result kept earlier;
- the approval inbox is the journal (`GuardInbox`): the agent process resumes a call's
  interrupt once the journal holds a decision or the deadline has passed, and the guard reads
  the decision from the journal, not from the resume value;
- the session API (`GuardedSessions`): an ask keeps the call in the journal too, with the
  policy the application kept for it at that moment, so the two never differ; approve and
  reject answer the guard (D-7, its deadline);
- the server log's hand-outs are the journal's intents (`hand_outs`): each is durable before
  its tool starts (D-5); its results are delivered when the journal keeps them
  (`results_delivered`), not when the checkpoints hold the tool message: the guard gives a
  kept result back after a crash, so that is when it reached the durable state that decides.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from atmostonce.engines.appstore import ApprovalRow
from atmostonce.engines.guards import worker_of
from atmostonce.engines.langgraph.client import LangGraphSessions
from atmostonce.engines.langgraph.store import ThreadedStore
from atmostonce.engines.langgraph.tools import (
    RunContext,
    ToolFunction,
    ToolKit,
    demo_tool,
)
from atmostonce.guard import (
    Approval,
    Finished,
    Guard,
    Statement,
    UnknownCall,
    current_attempt,
)
from atmostonce.guard.langgraph import GuardMiddleware
from atmostonce.runtime.client import AnswerReply
from atmostonce.runtime.tools import TOOLS
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply, ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import parse_key
from atmostonce.spec.policy import ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig

GUARD_KIT = "guard"
"""The kit name of the guarded variant (`mapping.Variant.kit`)."""
DECIDED = "decided"
"""The resume value of a guarded interrupt: the guard reads the decision from its journal."""


def statement_of(store: ThreadedStore, key: str) -> Statement:
    """The policy the application kept for the call when it was asked, as the guard's
    statement: resolving it gives back the same effect, approval rule and deadline."""
    parts = parse_key(key)
    call = store.call(parts.flow_id, parts.tool_call_id)
    if call is None:
        raise SpecError(f"no call {key} was asked")
    row = store.approvals(parts.flow_id).get(key) if call.requires_approval else None
    wait = max(0.0, row.deadline - row.asked) if row is not None else None
    return Statement(ToolPolicy(call.effect, call.requires_approval, wait))


def inbox_row(approval: Approval) -> ApprovalRow:
    return ApprovalRow(approval.key, parse_key(approval.key).flow_id, approval.state,
                       approval.asked, approval.deadline, approval.answered, approval.approve,
                       approval.expired)


class GuardInbox:
    """The guard's journal as the agent processes' approval inbox."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    def approvals(self, thread: str | None = None) -> dict[str, ApprovalRow]:
        return {a.key: inbox_row(a) for a in self.guard.approvals(thread)}

    def expire(self, keys: list[str]) -> list[str]:
        return self.guard.expire(keys)


class GuardApproval:
    """The approval step of `guard_kit`: one interrupt per call, resumed once decided."""

    def keys(self, value: Any) -> list[str]:
        return [str(value["key"])]

    def resume(self, value: Any, inbox: Mapping[str, ApprovalRow]) -> object | None:
        row = inbox.get(str(value["key"]))
        if row is not None and row.state is ApprovalState.WAITING:
            return None
        return DECIDED


def guard_kit(ctx: RunContext) -> ToolKit:
    """The guarded kit (see the module docstring)."""
    guard = ctx.guard
    if guard is None:
        raise SpecError("the guarded variant needs the guard's journal (--guard-journal)")

    def function(name: str) -> ToolFunction:
        async def run(tool_call_id: str, config: RunnableConfig, **arguments: Any
                      ) -> ToolMessage:
            call = ctx.call(config, tool_call_id)
            ok, output = await ctx.execute(call, current_attempt().label, arguments,
                                           hand_out=False)
            return ToolMessage(content=output, status="success" if ok else "error", name=name,
                               tool_call_id=tool_call_id)

        return run

    def key(call: ToolCall) -> str:
        return ctx.call(get_config(), str(call["id"])).key

    def artifact(result: Finished) -> dict[str, str] | None:
        if result.attempt is None:
            return None
        return {"attempt": result.attempt, "worker": worker_of(result.attempt),
                "key": result.key}

    middleware = GuardMiddleware(guard, key, lambda call: statement_of(ctx.store, key(call)),
                                 artifact, lambda k, n: f"{k}#{ctx.worker}.{n}")
    return ToolKit([demo_tool(name, function(name)) for name in TOOLS], [middleware],
                   GuardApproval(), GuardInbox(guard), retries=False)


class GuardedSessions(LangGraphSessions):
    """The session API of the guarded variant (see the module docstring)."""

    def __init__(self, store: ThreadedStore, checkpoints: Path, config: ExecutorConfig,
                 guard: Guard) -> None:
        super().__init__(store, checkpoints, config)
        self.guard = guard

    async def ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
                  arguments: str = "{}") -> str:
        key = await super().ask(session_id, turn_id, tool_call_id, tool, arguments)
        await asyncio.to_thread(self._keep, key, tool, arguments)
        return key

    def _keep(self, key: str, tool: str, arguments: str) -> None:
        self.guard.ask(key, tool, arguments, statement_of(self.store, key))

    async def approve(self, key: str) -> AnswerReply:
        return await asyncio.to_thread(self._answer, key, True)

    async def reject(self, key: str) -> AnswerReply:
        return await asyncio.to_thread(self._answer, key, False)

    def _answer(self, key: str, approve: bool) -> AnswerReply:
        try:
            reply = self.guard.answer(key, approve)
        except UnknownCall:
            return AnswerReply(False, f"no call {key}")
        return AnswerReply(reply is ApprovalReply.ACCEPTED, REPLY_TEXT[reply])

    def waiting(self, session_id: str) -> set[str]:
        return {a.key for a in self.guard.approvals(session_id)
                if a.state is ApprovalState.WAITING}
