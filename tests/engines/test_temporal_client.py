"""The Temporal session client's request wrapper: a request abandoned with the call that sent it
leaves nothing on stderr, and one that outlives the request timeout is an unknown outcome."""

from __future__ import annotations

import asyncio
import gc
from typing import Any, cast

import pytest

pytest.importorskip("temporalio")

from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError

from atmostonce.engines.temporal.client import TemporalSessions
from atmostonce.engines.temporal.payloads import Settings
from atmostonce.runtime.client import ServerUnavailable

SETTINGS = Settings(3, 0.2, 10.0, 3.0, 2.5, 1.0, 4.0)


async def update_that_fails_when_cancelled(client: object) -> str:
    """What Temporal's client does with an update cancelled before its answer came."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        raise WorkflowUpdateRPCTimeoutOrCancelledError() from None
    return "never"


def sessions(timeout: float) -> TemporalSessions:
    api = TemporalSessions("127.0.0.1:1", SETTINGS, request_timeout=timeout)
    api._client = cast(Any, object())
    return api


def test_a_request_cancelled_with_its_caller_leaves_no_unretrieved_exception() -> None:
    unretrieved: list[dict[str, Any]] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: unretrieved.append(context))
        call = asyncio.ensure_future(sessions(30.0)._call("ask", update_that_fails_when_cancelled))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        for _ in range(3):
            await asyncio.sleep(0)
        gc.collect()

    asyncio.run(scenario())
    assert unretrieved == []


def test_a_request_without_an_answer_in_time_is_an_unknown_outcome() -> None:
    async def scenario() -> None:
        with pytest.raises(ServerUnavailable, match=r"ask: no answer from 127\.0\.0\.1:1 in time"):
            await sessions(0.05)._call("ask", update_that_fails_when_cancelled)

    asyncio.run(scenario())
