"""The session API of a running server: `AsyncClient` for asyncio code, `Client` for everything
else (it runs an `AsyncClient` on a private event loop thread).

Both connect lazily and again after a lost connection (a server restart loses every
connection, D-8), so the same client works before and after a restart; a request that was in
flight when the connection went raises `ServerUnavailable` and can be sent again (a repeated
ask with the same ids is ignored by the executor, so it only waits for the call to be durable).
Every answer arrives after what it shows is durable, so a record a client has seen survives any
crash (TC-REC-1, TC-RCN-FIND).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from atmostonce.runtime import codec
from atmostonce.runtime.loop import LoopThread
from atmostonce.runtime.wire import (
    SERVER,
    LineProtocol,
    Message,
    WrongPeer,
    check_welcome,
    connect,
    hello,
    not_our_wire,
    unreachable,
)
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.session import AgentSnapshot, AttemptView, ToolCallFinished, ToolCallView

T = TypeVar("T")


class ServerUnavailable(SpecError):
    """The server cannot be reached, or the connection went before the answer came."""


@dataclass(frozen=True)
class AnswerReply:
    """The server's answer to an approval or a rejection (D-7)."""

    accepted: bool
    text: str


Arguments = str | Mapping[str, Any]


class AsyncClient:
    """One connection to the server, opened on first use and again after it was lost."""

    def __init__(self, host: str, port: int, *, token: str, connect_timeout: float = 2.0,
                 request_timeout: float = 60.0) -> None:
        self.host = host
        self.port = port
        self.token = token
        self.approver = False
        """Whether the server took this client's token for the approver's (set on connect)."""
        self.address = f"{host}:{port}"
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self._conn: LineProtocol | None = None
        self._welcome: asyncio.Future[Message] | None = None
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._subs: dict[str, asyncio.Queue[ToolCallFinished | None]] = {}
        self._ids = itertools.count(1)
        self._connecting: asyncio.Future[None] | None = None

    # -- the connection --------------------------------------------------------------------------

    async def connect(self) -> None:
        """Connect now (requests do it on their own); ServerUnavailable after
        `connect_timeout` seconds of refused attempts. Concurrent callers share one attempt."""
        if self._conn is not None and not self._conn.closed:
            return
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.ensure_future(self._connect())
        await asyncio.shield(self._connecting)

    async def _connect(self) -> None:
        deadline = time.monotonic() + self.connect_timeout
        while True:
            try:
                await self._open()
                return
            except OSError as error:
                if time.monotonic() >= deadline:
                    raise ServerUnavailable(
                        unreachable("the atmostonce server", self.address, error)) from None
                await asyncio.sleep(0.05)

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        self._welcome = loop.create_future()
        conn = await connect(self.host, self.port, self._on_message, self._on_close)
        self._conn = conn
        conn.send(hello("client", self.token))
        try:
            answer = await asyncio.wait_for(asyncio.shield(self._welcome), self.connect_timeout)
        except TimeoutError:
            self._welcome.cancel()
            conn.close()
            raise OSError(f"no welcome within {self.connect_timeout:g} s") from None
        except OSError:
            if conn.garbled:
                raise not_our_wire(conn.garbled, SERVER, self.address) from None
            raise
        self.approver = answer.get("approver") is True

    def _on_message(self, _: LineProtocol, message: Message) -> None:
        kind = message.get("type")
        if kind == "reply":
            future = self._waiting.pop(message.get("id", -1), None)
            if future is not None and not future.done():
                if message.get("ok"):
                    future.set_result(message.get("result") or {})
                else:
                    future.set_exception(SpecError(str(message.get("error"))))
        elif kind == "event":
            queue = self._subs.get(message.get("sub", ""))
            if queue is not None:
                queue.put_nowait(codec.finished_of(message.get("event", {})))
        elif self._welcome is not None and not self._welcome.done():
            try:
                self._welcome.set_result(check_welcome(message, SERVER, self.address))
            except WrongPeer as error:
                self._welcome.set_exception(error)

    def _on_close(self, conn: LineProtocol) -> None:
        if conn is not self._conn:
            return
        self._conn = None
        lost = ServerUnavailable(f"lost the connection to the atmostonce server at "
                                 f"{self.address}")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(lost)
        self._waiting.clear()
        for queue in self._subs.values():
            queue.put_nowait(None)
        if self._welcome is not None and not self._welcome.done():
            self._welcome.set_exception(OSError("closed before the welcome"))

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and wait for its result; SpecError with the server's reason."""
        await self.connect()
        conn = self._conn
        if conn is None:
            raise ServerUnavailable(f"lost the connection to the atmostonce server at "
                                    f"{self.address}")
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        conn.send({"id": request_id, "op": op, **fields})
        try:
            return await asyncio.wait_for(future, self.request_timeout)
        except TimeoutError:
            raise ServerUnavailable(f"no answer to {op} from {self.address} within "
                                    f"{self.request_timeout} s") from None
        finally:
            self._waiting.pop(request_id, None)

    # -- the session API -------------------------------------------------------------------------

    async def set_policy(self, tool: str, policy: ToolPolicy | None = None,
                         hints: ToolHints | None = None) -> None:
        """Register a tool or change its policy; calls asked before keep theirs (TC-SNAP-2)."""
        await self.request("set_policy", tool=tool, policy=codec.policy_json(policy),
                           hints=codec.hints_json(hints))

    async def open_session(self, session_id: str, default_effect: EffectClass | None = None,
                           *, hints_may_lower: bool = True) -> None:
        """Open (or reopen) a session with its default effect; with `hints_may_lower` false,
        framework metadata cannot make a call less cautious than that default (D-22)."""
        extra: dict[str, Any] = {} if hints_may_lower else {"hints_may_lower": False}
        await self.request("open_session", session_id=session_id,
                           default_effect=default_effect.value if default_effect else None,
                           **extra)

    async def ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
                  arguments: Arguments = "{}", *,
                  approval_deadline: float | None = None) -> str:
        """The model asks for a tool call; returns its idempotency key once the call is durable
        (TC-KEY-2). `approval_deadline` gives this call its own deadline for a person's answer,
        over its tool policy's and the server's (D-32)."""
        text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        extra: dict[str, Any] = {}
        if approval_deadline is not None:
            extra["approval_deadline"] = approval_deadline
        result = await self.request("ask", session_id=session_id, turn_id=turn_id,
                                    tool_call_id=tool_call_id, tool=tool, arguments=text,
                                    **extra)
        key: str = result["key"]
        return key

    async def approve(self, key: str) -> AnswerReply:
        return await self._answer(key, True)

    async def reject(self, key: str) -> AnswerReply:
        return await self._answer(key, False)

    async def _answer(self, key: str, approve: bool) -> AnswerReply:
        result = await self.request("answer", key=key, approve=approve)
        return AnswerReply(bool(result["accepted"]), str(result["text"]))

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        result = await self.request("snapshot", session_id=session_id)
        return codec.snapshot_of(result["snapshot"])

    async def attempts(self, session_id: str, key: str) -> tuple[AttemptView, ...]:
        """The Flow's history of the call with idempotency `key`: each attempt, when it was
        queued, handed to which worker, started and how and when it ended (D-30); SpecError
        when the session shows no such call."""
        return call_in(await self.get_agent_snapshot(session_id), key).attempts

    async def send_user_message(self, session_id: str, text: str) -> bool:
        """Append a user message to the session (TC-RCN-TELL); False for an unknown session."""
        result = await self.request("user_message", session_id=session_id, text=text)
        return bool(result["accepted"])

    async def stats(self) -> dict[str, Any]:
        return await self.request("stats")

    async def events(self, session_id: str, past: bool = True
                     ) -> AsyncGenerator[ToolCallFinished, None]:
        """The session's AgentEvents stream: a `tool_call_finished` event per record, those
        already recorded first when `past` (TC-RCN-FIND). Raises ServerUnavailable when the
        connection goes."""
        sub = f"sub-{next(self._ids)}"
        queue: asyncio.Queue[ToolCallFinished | None] = asyncio.Queue()
        self._subs[sub] = queue
        try:
            await self.request("subscribe", session_id=session_id, sub=sub, past=past)
            while True:
                event = await queue.get()
                if event is None:
                    raise ServerUnavailable(f"lost the connection to the atmostonce server at "
                                            f"{self.address}")
                yield event
        finally:
            self._subs.pop(sub, None)
            if self._conn is not None:
                self._conn.send({"id": next(self._ids), "op": "unsubscribe", "sub": sub})


def call_in(snapshot: AgentSnapshot, key: str) -> ToolCallView:
    """The call with idempotency `key` in the snapshot; SpecError when it shows none."""
    for view in snapshot.tool_calls:
        if view.idempotency_key == key:
            return view
    raise SpecError(f"session {snapshot.session_id!r} shows no tool call with the key {key!r}")


async def _next_within(events: AsyncIterator[ToolCallFinished],
                       timeout: float | None) -> ToolCallFinished | None:
    try:
        return await asyncio.wait_for(anext(events), timeout)
    except (TimeoutError, StopAsyncIteration):
        return None


class Client:
    """The blocking session API: the same calls as `AsyncClient`, run on a private loop."""

    def __init__(self, host: str, port: int, *, token: str, connect_timeout: float = 2.0,
                 request_timeout: float = 60.0) -> None:
        self._loop = LoopThread("atmostonce-client")
        self._client = AsyncClient(host, port, token=token, connect_timeout=connect_timeout,
                                   request_timeout=request_timeout)
        self.address = self._client.address

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop.closed:
            coro.close()
            raise ServerUnavailable("this client is closed")
        return self._loop.run(coro)

    def connect(self) -> None:
        self._run(self._client.connect())

    def set_policy(self, tool: str, policy: ToolPolicy | None = None,
                   hints: ToolHints | None = None) -> None:
        self._run(self._client.set_policy(tool, policy, hints))

    def open_session(self, session_id: str, default_effect: EffectClass | None = None, *,
                     hints_may_lower: bool = True) -> None:
        self._run(self._client.open_session(session_id, default_effect,
                                            hints_may_lower=hints_may_lower))

    def ask(self, session_id: str, turn_id: str, tool_call_id: str, tool: str,
            arguments: Arguments = "{}", *, approval_deadline: float | None = None) -> str:
        return self._run(self._client.ask(session_id, turn_id, tool_call_id, tool, arguments,
                                          approval_deadline=approval_deadline))

    def approve(self, key: str) -> AnswerReply:
        return self._run(self._client.approve(key))

    def reject(self, key: str) -> AnswerReply:
        return self._run(self._client.reject(key))

    def get_agent_snapshot(self, session_id: str) -> AgentSnapshot:
        return self._run(self._client.get_agent_snapshot(session_id))

    def attempts(self, session_id: str, key: str) -> tuple[AttemptView, ...]:
        return self._run(self._client.attempts(session_id, key))

    def send_user_message(self, session_id: str, text: str) -> bool:
        return self._run(self._client.send_user_message(session_id, text))

    def stats(self) -> dict[str, Any]:
        return self._run(self._client.stats())

    def events(self, session_id: str, past: bool = True,
               timeout: float | None = None) -> Iterator[ToolCallFinished]:
        """The session's AgentEvents stream; iteration ends when no event comes for `timeout`
        seconds (never, when None)."""
        stream = self._client.events(session_id, past)
        try:
            while True:
                event = self._run(_next_within(stream, timeout))
                if event is None:
                    return
                yield event
        finally:
            if not self._loop.closed:
                self._run(stream.aclose())

    def close(self) -> None:
        if self._loop.closed:
            return
        self._run(self._client.close())
        self._loop.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
