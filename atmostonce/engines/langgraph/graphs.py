"""The agent's graph of each variant, built as LangGraph's and LangChain's documentation show,
with the kit's tools and approval step (`kits.KITS`) and the page's retries.

- `create_agent`: `create_agent(model, tools, middleware=[approval..., ToolRetryMiddleware])`;
  each tool call of a model message runs as its own task. Retries come from LangChain's
  `ToolRetryMiddleware`, max_attempts attempts in all, for what `tools.retryable` says: a
  failure outside the tool of a call whose kept policy allows retries (CallTool); a call
  without them is never retried (CallSingleAttemptTool). A kit that retries itself (the
  guard's) gets no `ToolRetryMiddleware`.
- `tool_node`: a `StateGraph` over `MessagesState`: the model's node, then every call of its
  message in a `ToolNode`, the calls with retries in `tools` (LangGraph's `RetryPolicy`, which
  runs the whole node again), the others in `tools_once` (no retry policy), then the model
  again. A retry policy belongs to a node, so the calls are split by the policy each kept
  at ask time.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ToolRetryMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import RetryPolicy, Send

from atmostonce.engines.langgraph.mapping import Graph, Variant
from atmostonce.engines.langgraph.store import ThreadedStore
from atmostonce.engines.langgraph.tools import ToolKit, exhausted_text, retryable
from atmostonce.spec.protocol import ExecutorConfig

MODEL = "agent"
TOOLS = "tools"
TOOLS_ONCE = "tools_once"


def build(variant: Variant, model: BaseChatModel, kit: ToolKit, store: ThreadedStore,
          checkpointer: BaseCheckpointSaver[Any], config: ExecutorConfig) -> Any:
    """The compiled graph of `variant` (see the module docstring)."""
    if variant.graph is Graph.CREATE_AGENT:
        if not kit.retries:
            return create_agent(model, kit.tools, middleware=kit.middleware,
                                checkpointer=checkpointer)
        retries = ToolRetryMiddleware(max_retries=config.max_attempts - 1, retry_on=retryable,
                                      on_failure=exhausted_text,
                                      initial_delay=config.retry_backoff, backoff_factor=0.0,
                                      jitter=False)
        return create_agent(model, kit.tools, middleware=[*kit.middleware, retries],
                            checkpointer=checkpointer)
    return _tool_node_graph(model, kit, store, checkpointer, config)


def _tool_node_graph(model: BaseChatModel, kit: ToolKit, store: ThreadedStore,
                     checkpointer: BaseCheckpointSaver[Any], config: ExecutorConfig) -> Any:
    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def route(state: MessagesState, config: RunnableConfig) -> list[Send] | str:
        """The last model message's calls without a result, to `tools` or `tools_once` by
        the policy each kept."""
        messages = state["messages"]
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        done = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        calls = [c for c in (last.tool_calls if last is not None else []) if c["id"] not in done]
        if not calls:
            return END
        thread = str(config["configurable"]["thread_id"])
        kept = {c.call_id: c for c in store.calls(thread)}
        again = [c for c in calls if kept[str(c["id"])].retries_allowed]
        once = [c for c in calls if not kept[str(c["id"])].retries_allowed]
        return [Send(node, group) for node, group in ((TOOLS, again), (TOOLS_ONCE, once))
                if group]

    retry = RetryPolicy(initial_interval=config.retry_backoff, backoff_factor=1.0,
                        max_attempts=config.max_attempts, jitter=False, retry_on=retryable)
    builder = StateGraph(MessagesState)
    builder.add_node(MODEL, agent)
    builder.add_node(TOOLS, ToolNode(kit.tools), retry_policy=retry)
    builder.add_node(TOOLS_ONCE, ToolNode(kit.tools))
    builder.add_edge(START, MODEL)
    builder.add_conditional_edges(MODEL, route, [TOOLS, TOOLS_ONCE, END])
    builder.add_edge(TOOLS, MODEL)
    builder.add_edge(TOOLS_ONCE, MODEL)
    return builder.compile(checkpointer=checkpointer)
