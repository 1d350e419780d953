"""A small TCP proxy that can hold or drop the traffic between a worker and the server.

The chaos harness starts one per worker and points the worker at it; each connection the
worker opens is forwarded to the server on a connection of its own. `cut(HOLD)` stops
forwarding in both directions and keeps every byte, and a connection closed meanwhile stays
open on the other side, until `heal()` delivers both in order: a partition that heals before
anyone gives up. `cut(DROP)` closes every forwarded connection and refuses new ones until
healed: a partition that resets connections. A worker cut off longer than its lease stops its
runs (D-12), and the server declares it lost after the heartbeat timeout.

`hold(DOWN)` holds one direction only: requests reach the server and its answers wait, the
moment between a send and its return that a crash test needs (TC-RCN-ONCE).

A `tap`, when given, sees every complete line the proxy receives, with the direction and the
time it arrived (`time.monotonic()`), before it is forwarded or held: the runtime's wire is
newline-delimited JSON, so the reference adapter reads go-aheads and results off it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from atmostonce.engines.adapter import CutMode
from atmostonce.runtime.wire import LOOPBACK

UP = "up"
"""From the worker to the server."""
DOWN = "down"
"""From the server to the worker."""

Tap = Callable[["Pipe", str, bytes, float], None]


class _Side(asyncio.Protocol):
    """One of a pipe's two connections."""

    def __init__(self, pipe: Pipe | None, direction: str, refuse: bool = False) -> None:
        self.pipe = pipe
        self.direction = direction
        """The direction the bytes this side receives travel in."""
        self.refuse = refuse
        self.transport: asyncio.Transport | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.refuse:
            transport.close()

    def data_received(self, data: bytes) -> None:
        if self.pipe is not None:
            self.pipe.received(self, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.pipe is not None:
            self.pipe.lost(self)

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class Pipe:
    """One forwarded connection: the worker's side (`down`) and the server's (`up`)."""

    def __init__(self, proxy: Proxy, down: _Side) -> None:
        self.proxy = proxy
        self.down = down
        self.up: _Side | None = None
        self.connecting: asyncio.Future[None] | None = None
        self.pending: dict[str, list[bytes]] = {UP: [], DOWN: []}
        self.ended: set[str] = set()
        """Directions whose sender closed; passed on once nothing is held."""
        self.partial: dict[str, bytes] = {UP: b"", DOWN: b""}
        self.worker = ""
        """The worker name the peer gave in its hello, set by a tap."""
        self.done = False

    def received(self, side: _Side, data: bytes) -> None:
        direction = side.direction
        tap = self.proxy.tap
        if tap is not None:
            now = time.monotonic()
            buffer = self.partial[direction] + data
            lines = buffer.split(b"\n")
            self.partial[direction] = lines.pop()
            for line in lines:
                if line:
                    tap(self, direction, line, now)
        self.pending[direction].append(data)
        self.flush()

    def lost(self, side: _Side) -> None:
        self.ended.add(side.direction)
        self.flush()

    def _target(self, direction: str) -> _Side | None:
        return self.up if direction == UP else self.down

    def flush(self) -> None:
        """Forward what may go now; pass a close on once nothing is held any more."""
        held = self.proxy.held
        if self.done or (UP in held and self.up is None):
            return
        if self.up is None:
            if UP in self.ended:
                self.close()
            elif self.connecting is None:
                self.connecting = asyncio.ensure_future(self._connect())
            return
        for direction in (UP, DOWN):
            target = self._target(direction)
            chunks = self.pending[direction]
            if chunks and target is not None and direction not in held:
                target.write(b"".join(chunks))
                chunks.clear()
        if self.ended and not held:
            self.close()

    async def _connect(self) -> None:
        host, port = self.proxy.upstream
        try:
            _, up = await asyncio.get_running_loop().create_connection(
                lambda: _Side(self, DOWN), host, port)
        except OSError:
            self.close()
            return
        if self.done:
            up.close()
            return
        self.up = up
        self.flush()

    def close(self) -> None:
        """Close both sides and forget what was held."""
        if self.done:
            return
        self.done = True
        self.pending[UP].clear()
        self.pending[DOWN].clear()
        self.down.close()
        if self.up is not None:
            self.up.close()
        self.proxy.pipes.discard(self)


class Proxy:
    """Forwards each connection accepted on its port to `upstream` (see the module docstring).
    Runs on one event loop; call its methods from that loop's thread."""

    def __init__(self, upstream: tuple[str, int], tap: Tap | None = None) -> None:
        self.upstream = upstream
        self.tap = tap
        self.mode: CutMode | None = None
        self.held: frozenset[str] = frozenset()
        """The directions whose traffic waits."""
        self.pipes: set[Pipe] = set()
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self, host: str = LOOPBACK) -> int:
        """Listen on a free port of `host`; returns the port."""
        self._server = await asyncio.get_running_loop().create_server(self._accept, host, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    def _accept(self) -> _Side:
        if self.mode is CutMode.DROP:
            return _Side(None, UP, refuse=True)
        side = _Side(None, UP)
        pipe = Pipe(self, side)
        side.pipe = pipe
        self.pipes.add(pipe)
        asyncio.get_running_loop().call_soon(pipe.flush)
        return side

    def cut(self, mode: CutMode) -> None:
        self.mode = mode
        if mode is CutMode.HOLD:
            self.held = frozenset((UP, DOWN))
        else:
            for pipe in list(self.pipes):
                pipe.close()

    def hold(self, direction: str) -> None:
        """Hold the traffic in one direction (UP or DOWN) until healed."""
        self.held = frozenset((direction,))

    def heal(self) -> None:
        self.mode = None
        self.held = frozenset()
        for pipe in list(self.pipes):
            pipe.flush()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for pipe in list(self.pipes):
            pipe.close()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
