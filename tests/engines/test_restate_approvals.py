"""Approvals on the Restate mapping, on a real Restate server and worker: the first answer takes
the call's durable promise and every later answer gets D-7's reply; the durable sleep of the
deadline rejects a call nobody answered, and an answer after it finds the deadline passed. The
effect ledger shows that only the approved call ran."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("restate")
pytest.importorskip("hypercorn")

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.restate.adapter import RestateEngine
from atmostonce.engines.restate.client import RestateSessions
from atmostonce.engines.restate.server import binary
from atmostonce.runtime.client import AnswerReply
from atmostonce.runtime.ledger_client import LedgerClient
from atmostonce.runtime.processes import spawn
from atmostonce.runtime.tokens import ensure_token
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallStatus

pytestmark = pytest.mark.slow

DEADLINE = 3.0
WAIT = 60.0


@contextmanager
def restate_engine(tmp_path: Path) -> Iterator[tuple[RestateEngine, LedgerClient]]:
    try:
        binary()
    except SpecError as error:
        pytest.skip(str(error))
    token_file = tmp_path / "token"
    token = ensure_token(token_file)
    ledger = spawn("ledger", ["--db", str(tmp_path / "ledger.db"), "--port", "0",
                              "--token-file", str(token_file)], tmp_path / "ledger.log")
    (tmp_path / "engine").mkdir()
    engine: RestateEngine | None = None
    try:
        port = int(ledger.wait_ready(20.0)["port"])
        engine = RestateEngine(EngineSetup(tmp_path / "engine", f"127.0.0.1:{port}",
                                           ExecutorConfig(approval_deadline=DEADLINE), 1,
                                           DEFAULT_EXECUTOR, token_file=token_file))
        engine.start()
        with LedgerClient("127.0.0.1", port, token=token) as truth:
            yield engine, truth
    finally:
        if engine is not None:
            engine.close()
        ledger.stop()


def refused(reply: ApprovalReply) -> AnswerReply:
    return AnswerReply(False, REPLY_TEXT[reply])


async def status(api: RestateSessions, call_id: str) -> ToolCallStatus:
    """The call's status once it leaves the running states, within WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        snapshot = await api.get_agent_snapshot("s")
        for call in snapshot.tool_calls:
            if call.tool_call_id == call_id and call.status not in (
                    ToolCallStatus.RUNNING, ToolCallStatus.AWAITING_APPROVAL):
                return call.status
        await asyncio.sleep(0.1)
    raise AssertionError(f"{call_id} got no record within {WAIT:g} s")


@pytest.mark.clause("D-7", "TC-APR-2", "TC-REC-REJ")
def test_the_first_answer_or_the_deadline_decides_and_later_answers_get_d7s_reply(
        tmp_path: Path) -> None:
    async def scenario(engine: RestateEngine, truth: LedgerClient) -> None:
        api = RestateSessions(engine.server.ingress, engine.setup.config)
        await api.set_policy("cancel_order", ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE))
        await api.open_session("s")
        approved = await api.ask("s", "t", "a", "cancel_order", '{"order_id": "1"}')
        rejected = await api.ask("s", "t", "r", "cancel_order", '{"order_id": "2"}')
        expired = await api.ask("s", "t", "e", "cancel_order", '{"order_id": "3"}')
        assert (await api.approve(approved)).accepted
        assert await api.approve(approved) == refused(ApprovalReply.ALREADY_APPROVED)
        assert await api.reject(approved) == refused(ApprovalReply.ALREADY_APPROVED)
        assert (await api.reject(rejected)).accepted
        assert await api.approve(rejected) == refused(ApprovalReply.ALREADY_REJECTED)
        assert await status(api, "a") is ToolCallStatus.SUCCEEDED
        assert await status(api, "r") is ToolCallStatus.REJECTED
        assert await status(api, "e") is ToolCallStatus.REJECTED
        assert await api.approve(expired) == refused(ApprovalReply.DEADLINE_PASSED)
        assert [len(truth.runs(k)) for k in (approved, rejected, expired)] == [1, 0, 0]
        await api.close()

    with restate_engine(tmp_path) as (engine, truth):
        asyncio.run(scenario(engine, truth))
