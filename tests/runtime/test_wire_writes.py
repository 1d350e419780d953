"""A connection writes the messages sent in one turn of the event loop together, in the order
they were sent, and a process that ends with `os._exit` still gets out what it sent first
(`flush_all`), as the fencing worker's last word to the ledger must (D-12)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from atmostonce.runtime.wire import LOOPBACK, LineProtocol, Message, connect
from tests.load import patience

LIMIT = 10.0 * patience()
"""Seconds any one wait of these tests may take, more on a busy machine."""
ROOT = Path(__file__).resolve().parents[2]


async def _pair(received: list[Message]) -> tuple[LineProtocol, asyncio.Server]:
    """A listener that keeps what it receives, and a connection to it."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: LineProtocol(lambda _, m: received.append(m)), LOOPBACK, 0)
    port = server.sockets[0].getsockname()[1]
    return await connect(LOOPBACK, port, lambda _, __: None), server


async def _until(done: Callable[[], object]) -> None:
    async with asyncio.timeout(LIMIT):
        while not done():
            await asyncio.sleep(0.005)


def test_messages_sent_in_one_turn_leave_in_one_write_and_in_order() -> None:
    async def main() -> tuple[int, list[Message]]:
        received: list[Message] = []
        conn, server = await _pair(received)
        assert conn.transport is not None
        writes = 0
        write = conn.transport.write

        def counted(data: bytes | bytearray | memoryview) -> None:
            nonlocal writes
            writes += 1
            write(data)

        conn.transport.write = counted  # type: ignore[method-assign]
        for n in range(50):
            assert conn.send({"n": n})
        await _until(lambda: len(received) == 50)
        conn.close()
        server.close()
        return writes, received

    writes, received = asyncio.run(main())
    assert writes == 1
    assert [m["n"] for m in received] == list(range(50))


def test_what_is_queued_when_a_connection_closes_still_leaves() -> None:
    async def main() -> list[Message]:
        received: list[Message] = []
        conn, server = await _pair(received)
        conn.send({"last": "word"})
        conn.close()
        await _until(lambda: received)
        server.close()
        return received

    assert asyncio.run(main()) == [{"last": "word"}]


_SENDER = """
import asyncio, os, sys
from atmostonce.runtime.wire import connect, flush_all

async def main():
    conn = await connect("127.0.0.1", int(sys.argv[1]), lambda _, __: None)
    for n in range(3):
        conn.send({"n": n})
    if sys.argv[2] == "flush":
        flush_all()
    os._exit(0)

asyncio.run(main())
"""


@pytest.mark.parametrize("flush", [True, False], ids=["flush_all", "without"])
def test_a_process_ending_at_once_gets_out_what_it_sent_only_through_flush_all(
        flush: bool) -> None:
    """Without `flush_all` the queued messages die with the process: the case that shows the
    test would notice a fencing path that forgot it."""
    async def main() -> list[Message]:
        received: list[Message] = []
        closed = asyncio.Event()
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: LineProtocol(lambda _, m: received.append(m), lambda _: closed.set()),
            LOOPBACK, 0)
        port = server.sockets[0].getsockname()[1]
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _SENDER, str(port), "flush" if flush else "no",
            cwd=ROOT, stderr=subprocess.PIPE)
        try:
            async with asyncio.timeout(LIMIT):
                _, err = await child.communicate()
                await closed.wait()
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
            server.close()
        assert child.returncode == 0, err.decode()
        return received

    received = asyncio.run(main())
    assert received == ([{"n": 0}, {"n": 1}, {"n": 2}] if flush else [])
