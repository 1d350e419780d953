"""Talking to the effect ledger: `LedgerClient` asks it what ran and what took effect (for
checkers, tests and reconcile, TC-RCN-ASK); `AsyncLedger` is a worker's own connection, which
logs its runs and carries its tools' writes (D-12)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from atmostonce.runtime.wire import (
    HELLO_TIMEOUT,
    LEDGER,
    MAX_LINE,
    LineProtocol,
    Message,
    WrongPeer,
    check_welcome,
    connect,
    encode,
    hello,
    not_our_wire,
    unreachable,
)
from atmostonce.spec.errors import SpecError


@dataclass(frozen=True)
class LedgerRun:
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
    """A blocking connection to the ledger for queries, opened with the ledger's token."""

    def __init__(self, host: str, port: int, *, token: str, timeout: float = 10.0) -> None:
        self.address = f"{host}:{port}"
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as error:
            raise SpecError(unreachable("the effect ledger", self.address, error)) from None
        self._reader = self._sock.makefile("rb")
        self._ids = itertools.count(1)
        try:
            self._sock.sendall(encode(hello("reader", token)))
            check_welcome(self._line("the welcome"), LEDGER, self.address)
        except BaseException:
            self.close()
            raise

    def _line(self, what: str) -> Message:
        try:
            line = self._reader.readline(MAX_LINE + 1)
        except OSError as error:
            raise SpecError(f"lost the effect ledger at {self.address} waiting for {what}: "
                            f"{error}") from None
        if not line:
            raise SpecError(f"the effect ledger at {self.address} closed the connection before "
                            f"{what}")
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            raise not_our_wire("a line that is not a JSON object", LEDGER, self.address)
        return message

    def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        request_id = next(self._ids)
        try:
            self._sock.sendall(encode({"op": op, "id": request_id, **fields}))
        except OSError as error:
            raise SpecError(f"lost the effect ledger at {self.address}: {error}") from None
        reply = self._line(f"the answer to {op}")
        if reply.get("id") != request_id:
            raise SpecError(f"the effect ledger at {self.address} answered request "
                            f"{reply.get('id')!r} when {request_id} was asked")
        if not reply.get("ok"):
            raise SpecError(f"the effect ledger refused {op}: {reply.get('error')}")
        result: dict[str, Any] = reply["result"]
        return result

    def runs(self, key: str | None = None) -> list[LedgerRun]:
        """Every run the workers logged (of one key), in the order they started."""
        return [LedgerRun(**r) for r in self._request("runs", key=key)["runs"]]

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

    def __init__(self, host: str, port: int, *, token: str, workers: tuple[str, ...] = (),
                 incarnation: str = "") -> None:
        self.workers = workers
        """The worker names this connection speaks for; none: it only queries."""
        self.incarnation = incarnation
        self.host = host
        self.port = port
        self.address = f"{host}:{port}"
        self.token = token
        self._conn: LineProtocol | None = None
        self._welcome: asyncio.Future[Message] | None = None
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)

    async def connect(self, timeout: float = HELLO_TIMEOUT) -> None:
        """Connect and be welcomed; SpecError when nobody listens or nothing answers within
        `timeout`, WrongPeer when what answers is not the effect ledger or refuses the token."""
        self._welcome = asyncio.get_running_loop().create_future()
        try:
            conn = await connect(self.host, self.port, self._on_message, self._on_close)
        except OSError as error:
            raise SpecError(unreachable("the effect ledger", self.address, error)) from None
        self._conn = conn
        conn.send(hello("worker", self.token, workers=list(self.workers),
                        incarnation=self.incarnation) if self.workers
                  else hello("reader", self.token))
        try:
            await asyncio.wait_for(asyncio.shield(self._welcome), timeout)
        except TimeoutError:
            self._welcome.cancel()
            conn.close()
            raise SpecError(f"no welcome from {self.address} within {timeout:g} s: is it the "
                            "effect ledger?") from None
        except ConnectionError:
            if conn.garbled:
                raise not_our_wire(conn.garbled, LEDGER, self.address) from None
            raise SpecError(f"the effect ledger at {self.address} closed the connection "
                            "before its welcome") from None

    async def _ready(self) -> LineProtocol:
        if self._conn is None or self._conn.closed:
            await self.connect()
        assert self._conn is not None
        return self._conn

    def _on_message(self, _: LineProtocol, message: Message) -> None:
        if self._welcome is not None and not self._welcome.done():
            try:
                self._welcome.set_result(check_welcome(message, LEDGER, self.address))
            except WrongPeer as error:
                self._welcome.set_exception(error)
            return
        future = self._waiting.pop(message.get("id", -1), None)
        if future is None or future.done():
            return
        if message.get("ok"):
            future.set_result(message.get("result", {}))
        else:
            future.set_exception(SpecError(f"the effect ledger refused: {message.get('error')}"))

    def _on_close(self, _: LineProtocol) -> None:
        if self._welcome is not None and not self._welcome.done():
            self._welcome.set_exception(ConnectionError("closed before the welcome"))
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


async def worker_ledger(address: str, token: str, name: str, within: float) -> AsyncLedger:
    """An engine's worker process's ledger connection under a fresh incarnation, tried again
    until `within` seconds have passed: the ledger may still be starting."""
    host, _, port = address.rpartition(":")
    ledger = AsyncLedger(host, int(port), token=token, workers=(name,),
                         incarnation=f"{name}-{os.urandom(8).hex()}")
    deadline = time.monotonic() + within
    while True:
        try:
            await ledger.connect()
            return ledger
        except SpecError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
