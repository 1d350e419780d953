"""The session API on DBOS: what the chaos harness (and an application) calls. It writes the
application's store (`store`) and talks to the workflows through `DBOSClient`, DBOS's client
for code outside the application, on the same SQLite system database; each call runs in a
thread of its own so the event loop never waits on SQLite.

| session API          | DBOS mapping                                                        |
| -------------------- | ------------------------------------------------------------------ |
| `set_policy`         | the store's `policies`                                              |
| `open_session`       | a thread in the store, and `DBOSClient.enqueue` of the session's     |
|                      | workflow on the `sessions` queue, workflow id = session id          |
| `ask`                | the call in the store with the policy in force now, then             |
|                      | `DBOSClient.send(session, key, topic=ask, idempotency_key=key)`     |
| `approve`, `reject`  | the store's inbox: D-7's reply, the deadline judged by the clock;   |
|                      | a decided call's workflow is woken by `send(topic=key)`             |
| `get_agent_snapshot` | each call's record from the workflow's `records` event              |
|                      | (`DBOSClient.get_event`), waiting for approval while the inbox says  |
|                      | so, running otherwise; the records' tool results and the user        |
|                      | messages as history                                                 |
| `send_user_message`  | the store's `user_messages`                                         |
| `events`             | the snapshot, read every `POLL` seconds: each new record once        |

Every answer comes after what it reports is committed, so an acknowledged ask or answer is
durable (TC-REC-1).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

from dbos import DBOSClient

from atmostonce.engines.appstore import AppStore, CallRow
from atmostonce.engines.dbos.app import ASK, QUEUE, RECORDS, WORKFLOW, records_of
from atmostonce.engines.dbos.mapping import CallRecord
from atmostonce.runtime.client import AnswerReply
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import parse_key
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


def snapshot_of(session_id: str, calls: list[CallRow], waiting: set[str],
                records: dict[str, CallRecord], user_messages: list[str]) -> AgentSnapshot:
    """The snapshot a team reads off its store and the workflow's records (see the module
    docstring): `waiting` are the calls whose approval the inbox still waits for."""
    views = []
    history: list[Message] = []
    for call in calls:
        found = records.get(call.call_id)
        if found is not None:
            status, error = found.status, found.error
            history.append(Message(MessageRole.TOOL, "", call.turn, call.call_id, found.text,
                                   call.arguments))
        elif call.key in waiting:
            status, error = ToolCallStatus.AWAITING_APPROVAL, ""
        else:
            status, error = ToolCallStatus.RUNNING, ""
        views.append(ToolCallView(call.turn, call.call_id, call.tool, status, error, call.key,
                                  call.effect, call.requires_approval))
    history += [Message(MessageRole.USER, text) for text in user_messages]
    return AgentSnapshot(session_id, tuple(views), tuple(history))


class DBOSSessions:
    """The session API over the store and the DBOS system database at `system_database`."""

    def __init__(self, store: AppStore, system_database: Path, config: ExecutorConfig) -> None:
        self.store = store
        self.system_database = system_database
        self.config = config
        self._client: DBOSClient | None = None

    @property
    def client(self) -> DBOSClient:
        if self._client is None:
            self._client = DBOSClient(system_database_url=f"sqlite:///{self.system_database}")
        return self._client

    async def set_policy(self, tool: str, policy: ToolPolicy | None = None,
                         hints: ToolHints | None = None) -> None:
        await asyncio.to_thread(self.store.set_policy, tool, policy, hints)

    async def open_session(self, session_id: str,
                           default_effect: EffectClass | None = None) -> None:
        await asyncio.to_thread(self._open, session_id, default_effect)

    def _open(self, session_id: str, default_effect: EffectClass | None) -> None:
        self.store.open_session(session_id, default_effect)
        self.client.enqueue({"workflow_name": WORKFLOW, "queue_name": QUEUE,
                             "workflow_id": session_id}, session_id)

    async def ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
                  arguments: str = "{}") -> str:
        return await asyncio.to_thread(self._ask, session_id, turn_id, tool_call_id, tool,
                                       arguments)

    def _ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
             arguments: str) -> str:
        key = self.store.ask(session_id, turn_id, tool_call_id, tool, arguments, self.config)
        self.client.send(session_id, key, ASK, idempotency_key=key)
        return key

    async def approve(self, key: str) -> AnswerReply:
        return await asyncio.to_thread(self._answer, key, True)

    async def reject(self, key: str) -> AnswerReply:
        return await asyncio.to_thread(self._answer, key, False)

    def _answer(self, key: str, approve: bool) -> AnswerReply:
        reply = self.store.answer(key, approve)
        session_id = parse_key(key).flow_id
        row = self.store.approvals(session_id).get(key)
        if row is not None and row.state is not ApprovalState.WAITING:
            self.client.send(session_id, row.state.value, key, idempotency_key=f"{key}/answer")
        return reply

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        return await asyncio.to_thread(self._snapshot, session_id)

    def _snapshot(self, session_id: str) -> AgentSnapshot:
        calls = self.store.calls(session_id)
        waiting = {key for key, row in self.store.approvals(session_id).items()
                   if row.state is ApprovalState.WAITING}
        records = records_of(self.client.get_event(session_id, RECORDS, timeout_seconds=0))
        texts = [text for _, text in self.store.user_messages(session_id)]
        return snapshot_of(session_id, calls, waiting, records, texts)

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
        """Let the client go: `DBOSClient.destroy` waits up to 10 s for its listener thread,
        so it runs on a thread of its own that nothing waits for."""
        if self._client is not None:
            threading.Thread(target=self._client.destroy, name="dbos-client-destroy",
                             daemon=True).start()
            self._client = None
