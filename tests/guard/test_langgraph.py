"""The guard's LangGraph binding on a real `create_agent` graph: the policy is kept when the
model's message asks for the call (a later change never reaches it), an approval interrupts
the call until the journal holds a decision, the approved call runs once, and its tool message
carries the page's tool result."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.types import Command

from atmostonce.guard import Guard, Statement
from atmostonce.guard.langgraph import GuardMiddleware
from atmostonce.spec.approval import ApprovalReply
from atmostonce.spec.policy import EffectClass, ToolPolicy

KEY = "s/t1/c1"


class OneCall(BaseChatModel):
    """Asks for one `cancel_order` call, then answers without one."""

    @property
    def _llm_type(self) -> str:
        return "atmostonce-test"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> OneCall:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            message = AIMessage(content="done")
        else:
            message = AIMessage(content="", tool_calls=[
                {"name": "cancel_order", "args": {"order_id": "1"}, "id": "c1",
                 "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


@pytest.mark.clause("TC-SNAP-1", "TC-APR-2", "D-7", "TC-AMO-2")
def test_the_binding_keeps_the_policy_at_ask_and_runs_an_approved_call_once(
        tmp_path: Path) -> None:
    policies = {"cancel_order": ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE)}
    runs: list[str] = []

    @tool
    async def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        runs.append(order_id)
        return f"cancelled {order_id}"

    guard = Guard(tmp_path / "guard.db")

    def key(call: Any) -> str:
        return f"{get_config()['configurable']['thread_id']}/t1/{call['id']}"

    middleware = GuardMiddleware(guard, key,
                                 lambda call: Statement(policies.get(call["name"])))
    graph = create_agent(OneCall(), [cancel_order], middleware=[middleware],
                         checkpointer=InMemorySaver(),
                         interrupt_after=[f"{middleware.name}.after_model"])
    config: Any = {"configurable": {"thread_id": "s"}}

    async def scenario() -> list[BaseMessage]:
        await graph.ainvoke({"messages": [HumanMessage("cancel order 1")]}, config)
        kept = guard.call(KEY)
        assert (kept.policy.effect, kept.policy.requires_approval) == (
            EffectClass.NON_IDEMPOTENT_WRITE, True)
        policies["cancel_order"] = ToolPolicy(EffectClass.READ)
        await graph.ainvoke(None, config)
        state = await graph.aget_state(config)
        assert [i.value["key"] for i in state.interrupts] == [KEY]
        assert runs == []
        assert guard.answer(KEY, approve=True) is ApprovalReply.ACCEPTED
        done = await graph.ainvoke(Command(resume="stale or not, the journal decides"), config)
        assert guard.answer(KEY, approve=False) is ApprovalReply.ALREADY_APPROVED
        messages: list[BaseMessage] = done["messages"]
        return messages

    messages = asyncio.run(scenario())
    [result] = [m for m in messages if isinstance(m, ToolMessage)]
    assert (result.content, result.status, runs) == ("cancelled 1", "success", ["1"])
