"""Authentication on real processes: the server admits a worker or a client only with the
deployment's token and lets only the approver's token approve or reject; the ledger admits only
its token. A connection without the right token is refused with a one-line reason, logged, and
changes nothing: no journal entry, no worker, no record. Token files are made with mode 0600,
and one that others may read is refused."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from atmostonce.runtime.client import Client
from atmostonce.runtime.ledger_client import LedgerClient
from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.wire import WIRE_VERSION, WrongPeer, connect, hello
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.session import ToolCallStatus
from tests.load import patience
from tests.runtime.conftest import CONFIG, LIMIT, eventually

WRONG = "not-the-token"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(config=CONFIG, workers=1) as started:
        yield started


async def exchange(port: int, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    """Send `messages` on one raw connection; everything the peer answered until it closed."""
    received: list[dict[str, Any]] = []
    closed = asyncio.Event()
    conn = await connect("127.0.0.1", port, lambda _, m: received.append(m),
                         lambda _: closed.set())
    for message in messages:
        conn.send(message)
    try:
        await asyncio.wait_for(closed.wait(), LIMIT * patience())
    finally:
        conn.close()
    return received


def durable_entries(cluster: Cluster) -> int:
    with cluster.client() as client:
        entries: int = client.stats()["entries"]
        return entries


ASK = {"id": 1, "op": "ask", "session_id": "auth", "turn_id": "t1", "tool_call_id": "c1",
       "tool": "lookup_order", "arguments": "{}"}


@pytest.mark.parametrize("hello_message", [
    {"type": "hello", "wire": WIRE_VERSION, "role": "client"},
    hello("client", WRONG),
    hello("worker", WRONG, worker="intruder", running=[]),
    hello("worker", "", worker="intruder", running=[]),
    {"op": "ask", "session_id": "auth"},
])
def test_a_hello_without_the_right_token_is_refused_logged_and_changes_nothing(
        cluster: Cluster, hello_message: dict[str, Any]) -> None:
    before = durable_entries(cluster)
    answers = asyncio.run(exchange(cluster.server_port, hello_message, ASK,
                                   {"type": "poll", "n": 2}))
    assert len(answers) == 1
    assert answers[0]["type"] == "error"
    assert answers[0]["service"] == "atmostonce-server"
    assert answers[0]["error"].startswith("refused: ")
    assert "\n" not in answers[0]["error"]
    assert durable_entries(cluster) == before
    with cluster.client() as client:
        assert "intruder" not in " ".join(client.stats()["workers"])
        assert client.get_agent_snapshot("auth").tool_calls == ()
    server = cluster.server
    assert server is not None
    eventually("the server logged the refusal",
               lambda: "refused a connection from 127.0.0.1:" in server.output())


def test_the_deployment_token_may_ask_but_only_the_approver_token_may_approve_or_reject(
        cluster: Cluster) -> None:
    with cluster.client(approver=False) as agent, cluster.client() as person:
        agent.set_policy("refund", ToolPolicy(EffectClass.IDEMPOTENT_WRITE,
                                              requires_approval=True))
        key = agent.ask("rights", "t1", "c1", "refund", {"order_id": "9"})
        before = durable_entries(cluster)
        for answer in (agent.approve, agent.reject):
            with pytest.raises(SpecError, match="needs the approver token"):
                answer(key)
        assert durable_entries(cluster) == before
        [call] = agent.get_agent_snapshot("rights").tool_calls
        assert call.status is ToolCallStatus.AWAITING_APPROVAL
        assert person.approve(key).accepted
    assert cluster.server is not None
    assert "refused an answer from client" in cluster.server.output()


def test_a_client_with_a_wrong_token_gets_a_one_line_refusal(cluster: Cluster) -> None:
    with Client("127.0.0.1", cluster.server_port, token=WRONG) as stranger, \
            pytest.raises(WrongPeer) as refused:
        stranger.get_agent_snapshot("auth")
    assert str(refused.value) == (
        f"the atmostonce server at {cluster.server_address} refused the connection: refused: "
        "a client hello without the right token")


def test_the_ledger_refuses_a_reader_or_a_worker_without_its_token(cluster: Cluster) -> None:
    assert cluster.ledger is not None
    port = int(cluster.ledger.info["port"])
    with pytest.raises(WrongPeer, match=r"the effect ledger at .* refused the connection"):
        LedgerClient("127.0.0.1", port, token=WRONG)
    answers = asyncio.run(exchange(port, hello("worker", WRONG), {
        "op": "run_started", "id": 1, "worker": "intruder", "attempt": "x/y/z#1", "key": "x/y/z",
        "tool": "cancel_order"}))
    assert [a["type"] for a in answers] == ["error"]
    with cluster.ledger_client() as ledger:
        assert ledger.runs("x/y/z") == []


def test_a_worker_with_the_wrong_token_exits_2_with_one_line(
        cluster: Cluster, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong-token"
    wrong.write_text(WRONG + "\n")
    wrong.chmod(0o600)
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "worker", "--server", cluster.server_address,
         "--ledger", cluster.ledger_address, "--token-file", str(wrong),
         "--ledger-token-file", str(cluster.token_file)],
        capture_output=True, text=True, timeout=LIMIT * patience(), check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"atmostonce: error: the atmostonce server at {cluster.server_address} refused the "
        "connection: refused: a worker hello without the right token\n")


def test_serve_makes_its_token_files_beside_the_journal_with_mode_0600(tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    server = subprocess.Popen(
        [sys.executable, "-m", "atmostonce", "serve", "--journal", str(journal), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        ready = json.loads(server.stdout.readline().split(" ", 1)[1])
    finally:
        server.terminate()
        server.wait(LIMIT)
    files = [Path(ready["token_file"]), Path(ready["approver_token_file"])]
    assert files == [tmp_path / "journal.db.token", tmp_path / "journal.db.approver-token"]
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert files[0].read_text() != files[1].read_text()


def test_a_token_file_others_may_read_is_refused_untouched(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret\n")
    os.chmod(token, 0o644)
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "serve", "--journal", str(tmp_path / "j.db"),
         "--token-file", str(token)], capture_output=True, text=True,
        timeout=LIMIT * patience(), check=False)
    assert done.returncode == 2
    assert done.stderr == (f"atmostonce: error: token file {token} has mode 0644: group or "
                           f"others may read it; make it 0600 (chmod 600 {token})\n")
    assert token.read_text() == "secret\n"
    assert not (tmp_path / "j.db").exists()
