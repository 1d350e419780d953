"""Newline-delimited JSON over TCP: the framing every runtime process speaks.

One message is one JSON object on one line. `LineProtocol` turns a byte stream into messages
and back, with a bound on the line length so a peer cannot make a process buffer without end;
`connect` opens one, `bind` takes a port and `listen` serves it, `parse_address` reads
`HOST:PORT` with a one-line SpecError.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import weakref
from collections.abc import Callable
from typing import Any

from atmostonce.spec.errors import SpecError

Message = dict[str, Any]
WIRE_VERSION = "atmostonce-wire/2"
"""Version 2: every connection opens with a hello carrying a token, and every welcome or
refusal names the service that sent it."""
MAX_LINE = 4 * 1024 * 1024
PARTING = 2.0
"""Seconds a refused peer has to read the refusal before its connection is closed anyway."""
LOOPBACK = "127.0.0.1"
READY_PREFIX = "atmostonce-ready "
"""The line each runtime process prints on stdout once it serves, followed by a JSON object."""

_queued: weakref.WeakSet[LineProtocol] = weakref.WeakSet()
"""Connections holding messages not yet written; `flush_all` writes them before a process ends
at once."""

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_loads = json.JSONDecoder().decode


SERVER = "atmostonce-server"
LEDGER = "atmostonce-ledger"
SERVICES = {SERVER: "the atmostonce server", LEDGER: "the effect ledger"}
HELLO_TIMEOUT = 10.0
"""Seconds a process waits for the answer to its hello before it counts the peer as silent."""


class WrongPeer(SpecError):
    """What answered at an address is not the service the caller was pointed at, or it refused
    the caller: bad input that retrying cannot mend."""


def hello(role: str, token: str, **fields: object) -> Message:
    """The first message on every connection: who speaks, in which wire version, with which
    token."""
    return {"type": "hello", "wire": WIRE_VERSION, "role": role, "token": token, **fields}


def welcome(service: str, **fields: object) -> Message:
    return {"type": "welcome", "service": service, **fields}


def refusal(service: str, error: str) -> Message:
    return {"type": "error", "service": service, "error": error}


def check_welcome(message: Message, service: str, address: str) -> Message:
    """`message` if it is `service`'s welcome; WrongPeer naming what answered otherwise."""
    wanted = SERVICES[service]
    answered = message.get("service")
    if message.get("type") == "welcome" and answered == service:
        return message
    if message.get("type") == "error" and answered == service:
        raise WrongPeer(f"{wanted} at {address} refused the connection: "
                        f"{str(message.get('error'))[:300]}")
    if answered in SERVICES:
        raise WrongPeer(f"{address} is {SERVICES[str(answered)]}, not {wanted}")
    raise WrongPeer(f"{address} answered {str(message)[:120]!r}, which is not {wanted}")


def not_our_wire(problem: str, service: str, address: str) -> WrongPeer:
    """The peer at `address` sent bytes that are not this wire (`problem`, from LineProtocol)."""
    return WrongPeer(f"{address} answered with {problem}, so it is not {SERVICES[service]}")


def peer(conn: LineProtocol) -> str:
    """The address a connection comes from, for logs."""
    name = conn.transport.get_extra_info("peername") if conn.transport is not None else None
    return f"{name[0]}:{name[1]}" if isinstance(name, tuple) and len(name) >= 2 else "?"


def encode(message: Message) -> bytes:
    return (_dumps(message) + "\n").encode()


def ready_line(role: str, **fields: object) -> str:
    """The readiness line `processes` waits for: the role and where the process listens."""
    return READY_PREFIX + json.dumps({"role": role, **fields}, separators=(",", ":"))


def reason(error: BaseException) -> str:
    """Why a connection failed, in the system's words ("Connection refused"), not asyncio's
    ("Connect call failed ('127.0.0.1', 1)")."""
    if isinstance(error, OSError) and error.errno:
        return os.strerror(error.errno)
    return str(error) or type(error).__name__


def unreachable(what: str, address: str, error: OSError) -> str:
    """The one line saying `what` at `address` could not be reached, and why."""
    return f"cannot reach {what} at {address}: {reason(error)}"


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (0: any free port), taken before a process creates
    or opens any file, so a start that cannot have its port leaves nothing behind. SpecError,
    one line, when the port or the host cannot be had."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except OSError as error:
        raise SpecError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as error:
        sock.close()
        raise SpecError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.setblocking(False)
    return sock


async def listen(factory: Callable[[], asyncio.Protocol], sock: socket.socket
                 ) -> tuple[asyncio.Server, str, int]:
    """Serve connections on a socket from `bind`; the listener and the address it has."""
    listener = await asyncio.get_running_loop().create_server(factory, sock=sock)
    bound = sock.getsockname()
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
        self.parting = False
        """Set by `part`: what the peer still sends is read and dropped until it closes."""
        self.problem = ""
        self.garbled = ""
        """Set when the peer sent bytes that are not this wire: what was wrong with them."""
        self._buffer = b""
        self._out: list[bytes] = []
        """Messages sent during this turn of the event loop, written together at its end."""
        self._loop: asyncio.AbstractEventLoop | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        if self.parting:
            return
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
                self._garbled("a line that is not JSON")
                return
            if not isinstance(message, dict):
                self._garbled("a JSON line that is not an object")
                return
            self.on_message(self, message)
        self._buffer = buffer[start:]
        if len(self._buffer) > MAX_LINE:
            self._garbled(f"a line longer than {MAX_LINE} bytes")

    def _garbled(self, problem: str) -> None:
        self.garbled = problem
        self.close(problem)

    def send(self, message: Message) -> bool:
        """Queue `message`, to be written with the others sent in the same turn of the event
        loop; False when the connection is already closed. One write per turn, not one per
        message, cuts the system calls of a busy connection (a server answers a burst of
        commands with many messages to one worker)."""
        if self.closed or self.transport is None or self.transport.is_closing():
            return False
        if not self._out:
            assert self._loop is not None
            self._loop.call_soon(self.flush)
            _queued.add(self)
        self._out.append(encode(message))
        return True

    def flush(self) -> None:
        """Write what `send` queued."""
        out = self._out
        if not out:
            return
        self._out = []
        _queued.discard(self)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))

    def part(self, message: Message, problem: str) -> None:
        """Send `message` as the last word and close so that it arrives: stop taking input,
        send end-of-file, read and drop what the peer still sends, and close when it closes or
        after PARTING seconds (closing with unread input would reset the connection and could
        lose the message)."""
        if self.closed or self.transport is None or self.transport.is_closing():
            self.close(problem)
            return
        self.send(message)
        self.flush()
        self.parting = True
        if not self.problem:
            self.problem = problem
        if self.transport.can_write_eof():
            self.transport.write_eof()
        asyncio.get_running_loop().call_later(PARTING, self.close, problem)

    def eof_received(self) -> bool:
        return False

    def close(self, problem: str = "") -> None:
        if problem and not self.problem:
            self.problem = problem
        self.flush()
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
        self._out = []
        _queued.discard(self)
        if self.on_close is not None:
            self.on_close(self)


def flush_all() -> None:
    """Write every connection's queued messages now: a process about to end with `os._exit`
    calls it, so that what it sent before still leaves, as it did when each send wrote."""
    for conn in list(_queued):
        conn.flush()


async def connect(host: str, port: int, on_message: Callable[[LineProtocol, Message], None],
                  on_close: Callable[[LineProtocol], None] | None = None) -> LineProtocol:
    """Open a connection; OSError when nobody listens there."""
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(lambda: LineProtocol(on_message, on_close),
                                               host, port)
    return protocol
