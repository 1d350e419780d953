"""The session API on LangGraph: what the chaos harness (and an application) calls. There is no
server: the API writes the application's store (`store`) and reads the graph's checkpoints,
each call in a thread of its own so the event loop never waits on SQLite.

| session API          | LangGraph mapping                                                   |
| -------------------- | ------------------------------------------------------------------ |
| `set_policy`         | the store's `policies`                                              |
| `open_session`       | a thread in the store; its agent process starts the graph's thread   |
| `ask`                | the scripted model's next call, with the policy in force now: the    |
|                      | model answers with it once its turn is complete (`model`)            |
| `approve`, `reject`  | the approval inbox: D-7's reply, the deadline judged by the clock    |
| `get_agent_snapshot` | each call's record from its tool message in the thread's latest      |
|                      | checkpoint (`mapping.record_of`), waiting for approval while the     |
|                      | inbox says so, running otherwise; the graph's messages as history    |
| `send_user_message`  | the store's `user_messages`, shown at the end of the history until   |
|                      | the thread's agent process adds them to the graph's messages        |
| `events`             | the snapshot, read every `POLL` seconds: each new record once        |

Every answer comes after what it reports is committed, so an acknowledged ask or answer is
durable (TC-REC-1).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from atmostonce.engines.appstore import CallRow
from atmostonce.engines.langgraph import mapping
from atmostonce.engines.langgraph.checkpoints import thread_messages
from atmostonce.engines.langgraph.store import ThreadedStore
from atmostonce.runtime.client import AnswerReply
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import (
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallFinished,
    ToolCallStatus,
    ToolCallView,
)

POLL = 0.25
"""Seconds between two reads of a session's snapshot for its events."""


def _text(message: BaseMessage) -> str:
    content = message.content
    return content if isinstance(content, str) else str(content)


def snapshot_of(session_id: str, calls: list[CallRow], waiting: set[str],
                graph_messages: list[BaseMessage], user_messages: list[tuple[str, str]]
                ) -> AgentSnapshot:
    """The snapshot a team reads off its store and the thread's checkpoint (see the module
    docstring): `waiting` are the calls whose approval the inbox still waits for,
    `user_messages` the (message id, text) of every user message sent."""
    by_id = {c.call_id: c for c in calls}
    results: dict[str, tuple[str, str]] = {}
    history: list[Message] = []
    for message in graph_messages:
        if isinstance(message, ToolMessage):
            call = by_id.get(message.tool_call_id)
            if call is None:
                continue
            results.setdefault(call.call_id, (message.status, _text(message)))
            history.append(Message(MessageRole.TOOL, "", call.turn, call.call_id,
                                   _text(message), call.arguments))
        elif isinstance(message, HumanMessage):
            history.append(Message(MessageRole.USER, _text(message)))
        elif isinstance(message, AIMessage):
            history.append(Message(MessageRole.ASSISTANT, _text(message)))
    held = {m.id for m in graph_messages}
    history += [Message(MessageRole.USER, text) for mid, text in user_messages
                if mid not in held]
    views = []
    for call in calls:
        found = results.get(call.call_id)
        if found is not None:
            status, error = mapping.record_of(*found)
        elif call.key in waiting:
            status, error = ToolCallStatus.AWAITING_APPROVAL, ""
        else:
            status, error = ToolCallStatus.RUNNING, ""
        views.append(ToolCallView(call.turn, call.call_id, call.tool, status, error, call.key,
                                  call.effect, call.requires_approval))
    return AgentSnapshot(session_id, tuple(views), tuple(history))


class LangGraphSessions:
    """The session API over the store at `store` and the checkpoints at `checkpoints`."""

    def __init__(self, store: ThreadedStore, checkpoints: Path, config: ExecutorConfig) -> None:
        self.store = store
        self.checkpoints = checkpoints
        self.config = config

    async def set_policy(self, tool: str, policy: ToolPolicy | None = None,
                         hints: ToolHints | None = None) -> None:
        await asyncio.to_thread(self.store.set_policy, tool, policy, hints)

    async def open_session(self, session_id: str,
                           default_effect: EffectClass | None = None) -> None:
        await asyncio.to_thread(self.store.open_session, session_id, default_effect)

    async def ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
                  arguments: str = "{}") -> str:
        return await asyncio.to_thread(self.store.ask, session_id, turn_id, tool_call_id, tool,
                                       arguments, self.config)

    async def approve(self, key: str) -> AnswerReply:
        return await asyncio.to_thread(self.store.answer, key, True)

    async def reject(self, key: str) -> AnswerReply:
        return await asyncio.to_thread(self.store.answer, key, False)

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        return await asyncio.to_thread(self._snapshot, session_id)

    def _snapshot(self, session_id: str) -> AgentSnapshot:
        calls = self.store.calls(session_id)
        return snapshot_of(session_id, calls, self.waiting(session_id),
                           thread_messages(self.checkpoints, session_id),
                           self.store.user_messages(session_id))

    def waiting(self, session_id: str) -> set[str]:
        """The keys of the session's calls whose approval the inbox still waits for."""
        return {key for key, row in self.store.approvals(session_id).items()
                if row.state is ApprovalState.WAITING}

    async def send_user_message(self, session_id: str, text: str) -> bool:
        sent = await asyncio.to_thread(self.store.add_user_message, session_id, text)
        if not sent:
            raise SpecError(f"no session {session_id!r}")
        return sent

    async def events(self, session_id: str, past: bool = True
                     ) -> AsyncIterator[ToolCallFinished]:
        """The session's AgentEvents stream, read off its snapshot every POLL seconds."""
        seen: set[str] = set()
        if not past:
            seen = {v.tool_call_id for v in (await self.get_agent_snapshot(session_id))
                    .tool_calls if v.status.final}
        while True:
            snapshot = await self.get_agent_snapshot(session_id)
            for view in snapshot.tool_calls:
                if view.status.final and view.tool_call_id not in seen:
                    seen.add(view.tool_call_id)
                    yield ToolCallFinished(session_id, view.turn_id, view.tool_call_id,
                                           view.status, view.error)
            await asyncio.sleep(POLL)

    async def close(self) -> None:
        return None
