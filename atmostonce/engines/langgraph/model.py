"""The scripted chat model: a LangChain `BaseChatModel` that stands in for the LLM and answers
from the script, the calls the harness's seeded agent asked (`store.ThreadedStore.calls`).

Each answer is one `AIMessage`: the calls of the earliest turn the thread's messages do not hold
yet, all together (parallel tool calls), or, when there is none, a message without tool calls,
which ends the graph's run. The harness asks a turn's calls one by one, so a turn is answered
only once its last call was asked `QUIET` seconds ago; a call asked later than that joins the
next message. Answers are a function of the script and the messages, so a model step LangGraph
runs again after a crash answers the same, with the same message id.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.config import get_config
from pydantic import ConfigDict

from atmostonce.engines.appstore import CallRow
from atmostonce.engines.langgraph.store import ThreadedStore

QUIET = 0.15
"""Seconds after a turn's last call was asked before the model answers with the turn."""


def asked_ids(messages: Sequence[BaseMessage]) -> set[str]:
    """The tool call ids the model's messages in `messages` hold."""
    return {tc["id"] for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls
            if tc["id"] is not None}


def next_turn(calls: Sequence[CallRow], asked: set[str], now: float,
              quiet: float = QUIET) -> list[CallRow]:
    """The calls the model answers with next: those of the earliest turn not in `asked`, once
    its last one is `quiet` seconds old; none otherwise."""
    pending = [c for c in calls if c.call_id not in asked]
    if not pending:
        return []
    turn = [c for c in pending if c.turn == pending[0].turn]
    if now - max(c.asked for c in turn) < quiet:
        return []
    return turn


def answer(thread: str, turn: Sequence[CallRow], messages: Sequence[BaseMessage]) -> AIMessage:
    """The model's message: the turn's calls, or none, with an id that the same answer to the
    same messages always has."""
    if not turn:
        return AIMessage(content="", id=f"{thread}/idle/{len(messages)}")
    calls: list[Any] = [{"name": c.tool, "args": json.loads(c.arguments), "id": c.call_id,
                         "type": "tool_call"} for c in turn]
    return AIMessage(content="", id=f"{thread}/{turn[0].turn}/{turn[0].call_id}",
                     tool_calls=calls)


class ScriptedChatModel(BaseChatModel):
    """The chat model of every variant (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: ThreadedStore
    quiet: float = QUIET

    @property
    def _llm_type(self) -> str:
        return "atmostonce-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """The script names the tools; binding them changes nothing."""
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        thread = str(get_config()["configurable"]["thread_id"])
        turn = next_turn(self.store.calls(thread), asked_ids(messages), time.monotonic(),
                         self.quiet)
        return ChatResult(generations=[ChatGeneration(message=answer(thread, turn, messages))])
