"""The guard on LangGraph and LangChain: a team adopts it in a few lines.

    guard = Guard(Path("guard.db"))
    agent = create_agent(model, tools, checkpointer=saver, middleware=[
        GuardMiddleware(guard, key=lambda call: f"{thread()}/{turn()}/{call['id']}",
                        statement=lambda call: Statement(policy=POLICIES.get(call["name"])))])

`GuardMiddleware` keeps each call's policy when the model's message asks for it
(`aafter_model`), and runs every tool call through `Guard.run` (`awrap_tool_call`): the
approval step asks a person with `interrupt()`, one call at a time, and reads the decision from
the journal, never from the resume value, so a resume after a crash neither asks again nor runs
an approved single-attempt write twice; the tool runs only when the journal allows it. The
tool's `ToolMessage` says how it ended: `status="error"` is a failure it reported itself; an
exception means it may have run. `guarded_call` is the same step for a hand-built graph's own
tool node. Needs the `langgraph` extra.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from atmostonce.spec.errors import SpecError

try:
    from langchain.agents.middleware import AgentMiddleware
    from langchain.agents.middleware.types import ToolCallRequest
    from langchain_core.messages import AIMessage, ToolCall, ToolMessage
    from langgraph.types import Command, interrupt
except ImportError:
    raise SpecError("atmostonce.guard.langgraph needs the 'langgraph' extra, which is not "
                    "installed: pip install 'atmostonce[langgraph]'") from None

from atmostonce.guard.calls import Statement
from atmostonce.guard.guard import Guard, ToolFailed, Waiting, default_label, result_text
from atmostonce.guard.journal import Attempt, Finished
from atmostonce.spec.records import Record

KeyOf = Callable[[ToolCall], str]
"""The call's idempotency key `{thread}/{turn}/{tool_call_id}`: the team's turn ids."""
StatementOf = Callable[[ToolCall], Statement]
"""What decides the call's policy at ask time: the tool's ToolPolicy, hints, session default."""
ArtifactOf = Callable[[Finished], Any]
"""What the tool message carries beside its text, which the model never reads."""
Label = Callable[[str, int], str]


def _arguments(call: ToolCall) -> str:
    return json.dumps(call.get("args", {}), sort_keys=True, default=str)


def tool_message(call: ToolCall, result: Finished, artifact: Any = None) -> ToolMessage:
    """The call's `ToolMessage`: the record's tool result text (TC-REC-2)."""
    status = "success" if result.outcome.record is Record.SUCCEEDED else "error"
    return ToolMessage(content=result_text(result), status=status, name=call["name"],
                       tool_call_id=str(call["id"]), artifact=artifact)


def _text(message: ToolMessage) -> str:
    content = message.content
    return content if isinstance(content, str) else json.dumps(content, default=str)


async def guarded_call(guard: Guard, call: ToolCall, key: KeyOf, statement: StatementOf,
                       run: Callable[[], Awaitable[ToolMessage | Command[Any]]],
                       artifact: ArtifactOf | None = None, label: Label = default_label
                       ) -> ToolMessage:
    """One tool call through the guard: `run` runs the tool once; an approval the call waits
    for interrupts the graph until the journal has a decision."""
    k = key(call)
    await asyncio.to_thread(guard.ask, k, call["name"], _arguments(call), statement(call))

    async def tool(attempt: Attempt) -> str:
        message = await run()
        if not isinstance(message, ToolMessage):
            raise SpecError(f"{call['name']}: a guarded tool must return a ToolMessage, not "
                            f"{type(message).__name__}")
        if message.status == "error":
            raise ToolFailed(_text(message))
        return _text(message)

    while True:
        result = await guard.run(k, tool, label)
        if isinstance(result, Waiting):
            interrupt({"key": k, "tool": call["name"], "args": call.get("args", {}),
                       "deadline": result.deadline})
            continue
        return tool_message(call, result, artifact(result) if artifact else None)


class GuardMiddleware(AgentMiddleware[Any, Any, Any]):
    """`create_agent` middleware giving every tool call the page's semantics (see the module
    docstring)."""

    def __init__(self, guard: Guard, key: KeyOf, statement: StatementOf,
                 artifact: ArtifactOf | None = None, label: Label = default_label) -> None:
        super().__init__()
        self.guard = guard
        self.key = key
        self.statement = statement
        self.artifact = artifact
        self.label = label

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Keep the policy of each call the model's message asks for, now (TC-SNAP-1)."""
        last = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        for call in last.tool_calls if last is not None else []:
            await asyncio.to_thread(self.guard.ask, self.key(call), call["name"],
                                    _arguments(call), self.statement(call))
        return None

    async def awrap_tool_call(
            self, request: ToolCallRequest,
            handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        return await guarded_call(self.guard, request.tool_call, self.key, self.statement,
                                  lambda: handler(request), self.artifact, self.label)
