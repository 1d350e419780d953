"""The server on the wire, in this process with real sockets and a real journal: nothing leaves
the server before what it shows is durable (the hand-out before its go-ahead, D-5; a record
before its event, TC-REC-1), entries from many events share one fsynced commit, an idle poll is
held until work comes, and heartbeats are acknowledged so the worker's lease can run (D-12)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from atmostonce.runtime.client import AsyncClient
from atmostonce.runtime.durability import GroupCommit
from atmostonce.runtime.journal import open_journal, read_journal
from atmostonce.runtime.server import serve
from atmostonce.runtime.tokens import read_token
from atmostonce.runtime.wire import READY_PREFIX, LineProtocol, connect, hello
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallStatus
from tests.load import patience

CONFIG = ExecutorConfig(heartbeat_timeout=4.0, lease=2.0)
LIMIT = 10.0 * patience()
"""Seconds any one wait of these tests may take, more on a busy machine."""


@dataclass
class Running:
    journal: Path
    port: int
    token: str
    approver_token: str

    def client(self) -> AsyncClient:
        return AsyncClient("127.0.0.1", self.port, token=self.approver_token)

    async def worker(self, name: str) -> RawWorker:
        worker = RawWorker()
        await worker.connect(self.port, name, self.token)
        return worker


@asynccontextmanager
async def running_server(tmp_path: Path) -> AsyncIterator[Running]:
    journal = tmp_path / "journal.db"
    stop = asyncio.Event()
    ready: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(journal, "127.0.0.1", 0, CONFIG, stop,
                                     lambda line: ready.set_result(
                                         json.loads(line[len(READY_PREFIX):]))))
    info = await asyncio.wait_for(ready, LIMIT)
    try:
        yield Running(journal, int(info["port"]), read_token(Path(info["token_file"])),
                      read_token(Path(info["approver_token_file"])))
    finally:
        stop.set()
        assert await asyncio.wait_for(task, LIMIT) == 0


class RawWorker:
    """A worker speaking the wire protocol by hand, to watch exactly what the server sends."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.conn: LineProtocol | None = None
        self.n = 0

    async def connect(self, port: int, name: str, token: str) -> None:
        self.conn = await connect("127.0.0.1", port, lambda _, m: self.inbox.put_nowait(m))
        self.send(hello("worker", token, worker=name, incarnation="test", running=[]))
        assert (await self.receive())["type"] == "welcome"

    def send(self, message: dict[str, Any]) -> int:
        assert self.conn is not None
        self.n += 1
        self.conn.send({**message, "n": self.n})
        return self.n

    async def receive(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.inbox.get(), LIMIT)


async def until(client: AsyncClient, figure: str, value: int) -> None:
    """Wait until the server's stats show `figure` at `value`, within LIMIT."""
    async def reached() -> None:
        while (await client.stats())[figure] != value:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(reached(), LIMIT)


def entries_of(journal: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in read_journal(journal) if e["type"] == kind]


async def ask_a_read(client: AsyncClient, call_id: str = "c1") -> str:
    await client.set_policy("lookup_order", ToolPolicy(EffectClass.READ))
    return await client.ask("s", "t", call_id, "lookup_order", "{}")


@pytest.mark.clause("D-5", "TC-AMO-1")
def test_the_hand_out_is_durable_before_the_go_ahead_reaches_the_worker(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_server(tmp_path) as server:
            client = server.client()
            key = await ask_a_read(client)
            worker = await server.worker("w-1")
            n = worker.send({"type": "poll"})
            go = await worker.receive()
            handed = entries_of(server.journal, "handed")
            assert go["type"] == "go_ahead"
            assert (go["n"], go["key"], go["lease"]) == (n, key, CONFIG.lease)
            assert [(e["attempt"], e["worker"]) for e in handed] == [(go["attempt"], "w-1")]
            await client.close()

    asyncio.run(scenario())


@pytest.mark.clause("TC-REC-1", "TC-RCN-FIND")
def test_a_record_is_durable_before_its_event_or_snapshot_is_seen(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_server(tmp_path) as server:
            client = server.client()
            await ask_a_read(client)
            stream = client.events("s", past=False)
            first = asyncio.ensure_future(anext(stream))
            await until(client, "subscriptions", 1)
            worker = await server.worker("w-1")
            worker.send({"type": "poll"})
            go = await worker.receive()
            worker.send({"type": "started", "attempt": go["attempt"]})
            worker.send({"type": "finished", "attempt": go["attempt"], "ok": True,
                         "output": "shipped"})
            event = await asyncio.wait_for(first, LIMIT)
            assert event.status is ToolCallStatus.SUCCEEDED
            assert [e["record"] for e in entries_of(server.journal, "record")] == ["succeeded"]
            snapshot = await client.get_agent_snapshot("s")
            assert [c.status for c in snapshot.tool_calls] == [ToolCallStatus.SUCCEEDED]
            await stream.aclose()
            await client.close()

    asyncio.run(scenario())


@pytest.mark.clause("D-5")
def test_entries_of_many_events_share_one_fsynced_commit(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_server(tmp_path) as server:
            client = server.client()
            await client.set_policy("lookup_order", ToolPolicy(EffectClass.READ))
            before = await client.stats()
            await asyncio.gather(*(client.ask("s", "t", f"c{i}", "lookup_order", "{}")
                                   for i in range(200)))
            after = await client.stats()
            entries = after["committed_entries"] - before["committed_entries"]
            commits = after["commits"] - before["commits"]
            assert entries >= 400
            assert commits < entries / 4
            assert len(read_journal(server.journal)) == after["entries"]
            await client.close()

    asyncio.run(scenario())


@pytest.mark.clause("D-12")
def test_an_idle_poll_is_held_until_work_comes_and_heartbeats_are_acknowledged(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_server(tmp_path) as server:
            worker = await server.worker("w-1")
            n = worker.send({"type": "poll"})
            assert await worker.receive() == {"type": "no_work", "n": n}
            n = worker.send({"type": "poll"})
            client = server.client()
            await until(client, "parked_polls", 1)
            key = await ask_a_read(client)
            go = await worker.receive()
            assert (go["type"], go["n"], go["key"]) == ("go_ahead", n, key)
            beat = worker.send({"type": "heartbeat", "attempt": go["attempt"]})
            assert await worker.receive() == {"type": "ack", "n": beat}
            await client.close()

    asyncio.run(scenario())


@pytest.mark.clause("D-32")
def test_a_bad_request_gets_a_one_line_error_and_the_connection_stays(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_server(tmp_path) as server:
            client = server.client()
            with pytest.raises(SpecError, match="unknown op 'bogus'"):
                await client.request("bogus")
            with pytest.raises(SpecError, match="contains '/'"):
                await client.ask("s", "t/1", "c", "lookup_order")
            with pytest.raises(SpecError, match="'approval_deadline' must be a finite number"):
                await client.ask("s", "t", "c", "lookup_order", approval_deadline=-1.0)
            with pytest.raises(SpecError, match="approval_deadline must be a number"):
                await client.request("set_policy", tool="refund",
                                     policy={"effect": "read", "approval_deadline": "soon"})
            assert await client.send_user_message("nobody", "hello") is False
            await client.open_session("s")
            assert await client.send_user_message("s", "hello") is True
            await client.close()

    asyncio.run(scenario())


def test_a_failed_commit_shows_nothing_after_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        journal, _ = open_journal(tmp_path / "journal.db", lambda entries: None)
        failures: list[BaseException] = []
        commit = GroupCommit(journal, failures.append)
        shown: list[str] = []
        commit.then(lambda: shown.append("before"))
        journal.close()
        commit.persist({"type": "session", "at": 1.0, "session_id": "s",
                        "default_effect": None})
        commit.then(lambda: shown.append("after"))
        await asyncio.wait_for(commit.drain(), LIMIT)
        assert shown == ["before"]
        assert len(failures) == 1
        commit.close()

    asyncio.run(scenario())
