"""The session API over Restate's HTTP ingress: what the chaos harness (and an application) calls.

| session API           | Restate                                                          |
| --------------------- | ---------------------------------------------------------------- |
| `set_policy`          | `ToolPolicies/registry/set_policy`                                |
| `open_session`        | `AgentSession/{session}/open_session`                             |
| `ask`                 | `AgentSession/{session}/ask`, with the `idempotency-key` header   |
|                       | made from the call's key, so asking again is the same ask         |
| `approve`, `reject`   | `AgentSession/{session}/answer`: the reply of D-7's table          |
| `get_agent_snapshot`  | `AgentSession/{session}/snapshot` (shared handler)                |
| `send_user_message`   | `AgentSession/{session}/user_message`                             |
| `events`              | `AgentSession/{session}/events_after`, polled                     |

The ingress answers once the handler ran, which Restate journals first, so an acknowledged ask is
durable (TC-REC-1). A request that cannot reach the server, times out, or gets a server error
raises `ServerUnavailable`: its outcome is unknown, and asking again is safe. A request the
handler refuses (a terminal error with a 4xx code) is bad input (`SpecError`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from atmostonce.engines.restate.payloads import (
    event_of,
    settings_of,
    snapshot_of,
    statement_of,
)
from atmostonce.runtime.client import AnswerReply, ServerUnavailable
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import build_key, parse_key
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import AgentSnapshot, ToolCallFinished

POLL = 0.25
"""Seconds between two reads of a session's events."""


class RestateSessions:
    """The session API on one HTTP client of the ingress (see the module docstring). Used from
    one event loop."""

    def __init__(self, ingress: str, config: ExecutorConfig, *, request_timeout: float = 10.0,
                 opened: Callable[[str], None] = lambda session_id: None) -> None:
        self.ingress = ingress
        self.config = config
        self.request_timeout = request_timeout
        self.opened = opened
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(base_url=self.ingress, timeout=self.request_timeout)
        return self._client

    async def _call(self, what: str, path: str, body: object = None,
                    idempotency_key: str | None = None) -> Any:
        headers = {} if body is None else {"content-type": "application/json"}
        if idempotency_key is not None:
            headers["idempotency-key"] = idempotency_key
        try:
            answer = await self._http().post(
                path, content=None if body is None else json.dumps(body), headers=headers)
        except httpx.HTTPError as error:
            raise ServerUnavailable(f"{what}: no answer from {self.ingress}: "
                                    f"{type(error).__name__}: {error}") from None
        if answer.status_code >= 500 or answer.status_code in (404, 408, 409, 429):
            if answer.status_code == 404 and "no session" in answer.text:
                raise SpecError(f"{what}: {answer.text}")
            raise ServerUnavailable(f"{what}: {answer.status_code} {answer.text[:200]}")
        if answer.status_code >= 400:
            raise SpecError(f"{what}: refused: {answer.status_code} {answer.text[:300]}")
        return answer.json() if answer.content else None

    async def set_policy(self, tool: str, policy: ToolPolicy | None = None,
                         hints: ToolHints | None = None) -> None:
        await self._call("set_policy", "/ToolPolicies/registry/set_policy",
                         {"tool": tool, "statement": statement_of(policy, hints)})

    async def open_session(self, session_id: str,
                           default_effect: EffectClass | None = None) -> None:
        await self._call("open_session", f"/AgentSession/{session_id}/open_session",
                         {"default_effect": default_effect.value if default_effect else None,
                          "settings": settings_of(self.config)})
        self.opened(session_id)

    async def ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
                  arguments: str = "{}") -> str:
        key = build_key(session_id, turn_id, tool_call_id)
        answer = await self._call("ask", f"/AgentSession/{session_id}/ask",
                                  {"turn_id": turn_id, "tool_call_id": tool_call_id,
                                   "tool": tool, "arguments": arguments},
                                  idempotency_key=f"ask {key}")
        return str(answer)

    async def _answer(self, key: str, approve: bool) -> AnswerReply:
        session_id = parse_key(key).flow_id
        out = await self._call("approve" if approve else "reject",
                               f"/AgentSession/{session_id}/answer",
                               {"key": key, "approve": approve})
        return AnswerReply(bool(out["accepted"]), str(out["text"]))

    async def approve(self, key: str) -> AnswerReply:
        return await self._answer(key, True)

    async def reject(self, key: str) -> AnswerReply:
        return await self._answer(key, False)

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        """The session's snapshot; an empty one for a session never opened."""
        view = await self._call("get_agent_snapshot", f"/AgentSession/{session_id}/snapshot")
        return snapshot_of(view)

    async def send_user_message(self, session_id: str, text: str) -> bool:
        return bool(await self._call("send_user_message",
                                     f"/AgentSession/{session_id}/user_message", text))

    async def events(self, session_id: str, past: bool = True
                     ) -> AsyncIterator[ToolCallFinished]:
        """The session's AgentEvents stream, read every POLL seconds; each event once per
        subscription. ServerUnavailable ends the stream: subscribe again."""
        seen = 0
        if not past:
            seen = len(await self._events(session_id, 0))
        while True:
            for view in await self._events(session_id, seen):
                seen += 1
                yield event_of(view)
            await asyncio.sleep(POLL)

    async def _events(self, session_id: str, seen: int) -> list[dict[str, Any]]:
        views = await self._call("events", f"/AgentSession/{session_id}/events_after", seen)
        return list(views or [])

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
