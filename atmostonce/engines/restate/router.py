"""The deployment's one address in front of several worker processes: Restate registers a
deployment by one URL, so each connection Restate opens to it is forwarded to the next live
worker (through that worker's `Proxy`, which the harness cuts), taking turns. Restate speaks
HTTP/2 and keeps its connection open, so one worker serves every invocation until its
connection goes (killed, dropped); Restate then connects again and reaches the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable

from atmostonce.runtime.wire import LOOPBACK


class Router:
    def __init__(self, targets: Callable[[], list[tuple[str, int]]]) -> None:
        self.targets = targets
        """The worker addresses to try, live ones only, in the order they were started."""
        self._turn = itertools.count()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str = LOOPBACK) -> int:
        self._server = await asyncio.start_server(self._accept, host, 0)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        targets = self.targets()
        start = next(self._turn)
        for i in range(len(targets)):
            host, port = targets[(start + i) % len(targets)]
            try:
                up_reader, up_writer = await asyncio.open_connection(host, port)
            except OSError:
                continue
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
            return
        writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        writer.close()
