"""Talking to the effect ledger: `LedgerClient` asks it what ran and what took effect (for
checkers, tests and reconcile, TC-RCN-ASK); `AsyncLedger` is a worker's own connection, which
logs its runs and carries its tools' writes (D-12)."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from dataclasses import dataclass
from typing import Any

from atmostonce.executor.runtime.wire import LineProtocol, Message, connect, encode, unreachable
from atmostonce.spec.errors import SpecError


@dataclass(frozen=True)
class Run:
    """One run of a tool at a worker; `end` is None while it goes on or when it was killed."""

    worker: str
    attempt: str
    key: str
    tool: str
    started: float
    ended: float | None
    end: str | None
    output: str | None


@dataclass(frozen=True)
class Write:
    """One write a tool sent; `applied` is False when the service dropped a repeated key or
    refused the write because the worker's lease had run out (`fenced`)."""

    key: str
    tool: str
    worker: str
    attempt: str
    at: float
    applied: bool
    fenced: bool
    payload: str


class LedgerClient:
    """A blocking connection to the ledger for queries."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.address = f"{host}:{port}"
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as error:
            raise SpecError(unreachable("the effect ledger", self.address, error)) from None
        self._reader = self._sock.makefile("rb")
        self._ids = itertools.count(1)

    def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        request_id = next(self._ids)
        try:
            self._sock.sendall(encode({"op": op, "id": request_id, **fields}))
            line = self._reader.readline()
        except OSError as error:
            raise SpecError(f"lost the effect ledger at {self.address}: {error}") from None
        if not line:
            raise SpecError(f"the effect ledger at {self.address} closed the connection")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise SpecError(f"the effect ledger refused {op}: {reply.get('error')}")
        result: dict[str, Any] = reply["result"]
        return result

    def runs(self, key: str | None = None) -> list[Run]:
        """Every run the workers logged (of one key), in the order they started."""
        return [Run(**r) for r in self._request("runs", key=key)["runs"]]

    def writes(self, key: str | None = None) -> list[Write]:
        """Every write the tools sent (with one key), in the order they arrived."""
        return [Write(**w) for w in self._request("writes", key=key)["writes"]]

    def applied(self, key: str) -> int:
        """How many writes with `key` the services applied."""
        count: int = self._request("lookup", key=key)["applied"]
        return count

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> LedgerClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncLedger:
    """A worker's connection to the ledger: run starts and ends are sent without waiting (they
    go out in order on the one connection), writes wait for the service's answer."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._conn: LineProtocol | None = None
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)

    async def connect(self) -> None:
        try:
            self._conn = await connect(self.host, self.port, self._on_message, self._on_close)
        except OSError as error:
            raise SpecError(unreachable("the effect ledger", f"{self.host}:{self.port}",
                                        error)) from None

    async def _ready(self) -> LineProtocol:
        if self._conn is None or self._conn.closed:
            await self.connect()
        assert self._conn is not None
        return self._conn

    def _on_message(self, _: LineProtocol, message: Message) -> None:
        future = self._waiting.pop(message.get("id", -1), None)
        if future is None or future.done():
            return
        if message.get("ok"):
            future.set_result(message.get("result", {}))
        else:
            future.set_exception(SpecError(f"the effect ledger refused: {message.get('error')}"))

    def _on_close(self, _: LineProtocol) -> None:
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(SpecError("lost the connection to the effect ledger"))
        self._waiting.clear()

    def send(self, message: Message) -> None:
        """Send without waiting; dropped when the ledger is not connected."""
        if self._conn is not None:
            self._conn.send(message)

    async def request(self, message: Message) -> dict[str, Any]:
        conn = await self._ready()
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        if not conn.send({**message, "id": request_id}):
            self._waiting.pop(request_id, None)
            raise SpecError("lost the connection to the effect ledger")
        return await future

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
