"""Newline-delimited JSON over TCP: the framing every runtime process speaks.

One message is one JSON object on one line. `LineProtocol` turns a byte stream into messages
and back, with a bound on the line length so a peer cannot make a process buffer without end;
`connect` opens one, `listen` serves one port, `parse_address` reads `HOST:PORT` with a
one-line SpecError.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from atmostonce.spec.errors import SpecError

Message = dict[str, Any]
WIRE_VERSION = "atmostonce-wire/1"
MAX_LINE = 4 * 1024 * 1024
LOOPBACK = "127.0.0.1"
READY_PREFIX = "atmostonce-ready "
"""The line each runtime process prints on stdout once it serves, followed by a JSON object."""

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_loads = json.JSONDecoder().decode


def encode(message: Message) -> bytes:
    return (_dumps(message) + "\n").encode()


def ready_line(role: str, **fields: object) -> str:
    """The readiness line `processes` waits for: the role and where the process listens."""
    return READY_PREFIX + json.dumps({"role": role, **fields}, separators=(",", ":"))


def unreachable(what: str, address: str, error: OSError) -> str:
    """The one line saying `what` at `address` could not be reached, and why."""
    return f"cannot reach {what} at {address}: {error.strerror or error}"


async def listen(factory: Callable[[], asyncio.Protocol], host: str, port: int
                 ) -> tuple[asyncio.Server, str, int]:
    """Serve connections on `host:port` (0: any free port); the listener and the address it
    got. SpecError, one line, when the port cannot be had."""
    try:
        listener = await asyncio.get_running_loop().create_server(factory, host, port)
    except OSError as error:
        raise SpecError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    bound = listener.sockets[0].getsockname()
    return listener, str(bound[0]), int(bound[1])


def parse_address(text: str) -> tuple[str, int]:
    """`HOST:PORT` as a (host, port) pair; SpecError naming the problem otherwise."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise SpecError(f"address {text!r} must look like HOST:PORT, such as 127.0.0.1:7400")
    return host, parse_port(port_text)


def parse_port(text: str | int) -> int:
    try:
        port = int(text)
    except ValueError:
        raise SpecError(f"port {text!r} is not a whole number") from None
    if not 0 <= port <= 65535:
        raise SpecError(f"port {port} is outside 0-65535")
    return port


class LineProtocol(asyncio.Protocol):
    """One connection: calls `on_message` for each JSON object received and `on_close` once
    when the connection ends; a line that is not a JSON object closes the connection."""

    def __init__(self, on_message: Callable[[LineProtocol, Message], None],
                 on_close: Callable[[LineProtocol], None] | None = None) -> None:
        self.on_message = on_message
        self.on_close = on_close
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.problem = ""
        self._buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer + data if self._buffer else data
        start = 0
        while not self.closed:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            line = buffer[start:end]
            start = end + 1
            if not line.strip():
                continue
            try:
                message = _loads(line.decode())
            except (UnicodeDecodeError, ValueError):
                self.close("a line that is not JSON")
                return
            if not isinstance(message, dict):
                self.close("a JSON line that is not an object")
                return
            self.on_message(self, message)
        self._buffer = buffer[start:]
        if len(self._buffer) > MAX_LINE:
            self.close(f"a line longer than {MAX_LINE} bytes")

    def send(self, message: Message) -> bool:
        """Queue `message`; False when the connection is already closed."""
        if self.closed or self.transport is None or self.transport.is_closing():
            return False
        self.transport.write(encode(message))
        return True

    def close(self, problem: str = "") -> None:
        if problem and not self.problem:
            self.problem = problem
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
        self._closed()

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and not self.problem:
            self.problem = str(exc)
        self._closed()

    def _closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.on_close is not None:
            self.on_close(self)


async def connect(host: str, port: int, on_message: Callable[[LineProtocol, Message], None],
                  on_close: Callable[[LineProtocol], None] | None = None) -> LineProtocol:
    """Open a connection; OSError when nobody listens there."""
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(lambda: LineProtocol(on_message, on_close),
                                               host, port)
    return protocol
