"""The proxy the nemesis cuts worker connections with, on real sockets: it forwards both ways,
holds traffic (and a close) without losing any until healed, drops connections and refuses new
ones, and holds one direction alone; a tap sees every line it receives."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from atmostonce.engines.adapter import CutMode
from atmostonce.engines.proxy import DOWN, UP, Pipe, Proxy

pytestmark = pytest.mark.clause("D-12")


RECEIVED: list[bytes] = []


async def echo_server() -> tuple[asyncio.Server, int]:
    """Answers each line with `echo LINE`, noting in RECEIVED what reached it."""
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            RECEIVED.append(line)
            writer.write(b"echo " + line)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


async def lines(reader: asyncio.StreamReader, timeout: float) -> AsyncIterator[bytes]:
    while True:
        try:
            line = await asyncio.wait_for(reader.readline(), timeout)
        except TimeoutError:
            return
        if not line:
            return
        yield line


async def read_within(reader: asyncio.StreamReader, timeout: float) -> bytes | None:
    try:
        return await asyncio.wait_for(reader.readline(), timeout)
    except TimeoutError:
        return None


def test_hold_keeps_every_byte_until_healed_and_a_tap_sees_each_line() -> None:
    async def scenario() -> None:
        server, port = await echo_server()
        seen: list[tuple[str, bytes]] = []

        def tap(pipe: Pipe, direction: str, line: bytes, at: float) -> None:
            seen.append((direction, line))

        proxy = Proxy(("127.0.0.1", port), tap)
        reader, writer = await asyncio.open_connection("127.0.0.1", await proxy.start())
        writer.write(b"one\n")
        assert await read_within(reader, 2.0) == b"echo one\n"
        proxy.cut(CutMode.HOLD)
        writer.write(b"two\nthree\n")
        await writer.drain()
        assert await read_within(reader, 0.3) is None
        proxy.heal()
        assert [line async for line in lines(reader, 0.5)] == [b"echo two\n", b"echo three\n"]
        assert (UP, b"two") in seen
        assert (DOWN, b"echo three") in seen
        writer.close()
        await proxy.close()
        server.close()

    asyncio.run(scenario())


def test_drop_closes_connections_and_refuses_new_ones_until_healed() -> None:
    async def scenario() -> None:
        server, port = await echo_server()
        proxy = Proxy(("127.0.0.1", port))
        listen = await proxy.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", listen)
        writer.write(b"one\n")
        assert await read_within(reader, 2.0) == b"echo one\n"
        proxy.cut(CutMode.DROP)
        assert await read_within(reader, 2.0) == b""
        again, _ = await asyncio.open_connection("127.0.0.1", listen)
        assert await read_within(again, 2.0) == b""
        proxy.heal()
        reader, writer = await asyncio.open_connection("127.0.0.1", listen)
        writer.write(b"two\n")
        assert await read_within(reader, 2.0) == b"echo two\n"
        writer.close()
        await proxy.close()
        server.close()

    asyncio.run(scenario())


def test_holding_one_direction_lets_requests_through_and_keeps_the_answers() -> None:
    async def scenario() -> None:
        server, port = await echo_server()
        proxy = Proxy(("127.0.0.1", port))
        reader, writer = await asyncio.open_connection("127.0.0.1", await proxy.start())
        writer.write(b"warm\n")
        assert await read_within(reader, 2.0) == b"echo warm\n"
        proxy.hold(DOWN)
        writer.write(b"sent\n")
        await writer.drain()
        assert await read_within(reader, 0.3) is None
        assert RECEIVED[-1] == b"sent\n"
        proxy.heal()
        assert await read_within(reader, 2.0) == b"echo sent\n"
        writer.close()
        await proxy.close()
        server.close()

    asyncio.run(scenario())
