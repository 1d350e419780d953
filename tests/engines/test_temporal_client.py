"""The Temporal session client's request wrapper: a request abandoned with the call that sent it
leaves nothing on stderr; one that outlives the request timeout, or that the server turns away
while the workflow's task is being retried, is an unknown outcome to ask again; one the workflow
refuses is bad input; a query that finds the workflow no longer replaying is the engine's
finding."""

from __future__ import annotations

import asyncio
import gc
from typing import Any, cast

import pytest

pytest.importorskip("temporalio")

from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError, RPCStatusCode

from atmostonce.engines.temporal.adapter import wedged_notes
from atmostonce.engines.temporal.client import TemporalSessions, Wedged
from atmostonce.engines.temporal.payloads import Settings
from atmostonce.runtime.client import ServerUnavailable
from atmostonce.spec.errors import SpecError

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


async def refused(message: str) -> None:
    raise RPCError(message, RPCStatusCode.FAILED_PRECONDITION, b"")


@pytest.mark.clause("TC-REC-1")
def test_an_update_turned_away_while_the_workflow_task_is_retried_is_asked_again() -> None:
    """Seen in a 5-minute chaos run (seed 2) after a server restart: the server failed the
    workflow's task (the session worker accepted an update the server had completed) and
    refused an ask sent meanwhile; the ask was never taken, so it is an unknown outcome."""
    text = ("Unable to perform workflow execution update due to unexpected workflow task "
            "failure.")

    async def scenario() -> None:
        with pytest.raises(ServerUnavailable, match="being retried"):
            await sessions(5.0)._call("ask", lambda client: refused(text))
        with pytest.raises(SpecError, match="FAILED_PRECONDITION: workflow closed") as bad:
            await sessions(5.0)._call("ask", lambda client: refused("workflow closed"))
        assert not isinstance(bad.value, ServerUnavailable)

    asyncio.run(scenario())


def test_a_query_that_finds_the_workflow_no_longer_replaying_reports_the_wedged_session() -> None:
    """The error a chaos run met on session s2's snapshot (docs/engines.md, P-7): the engine's
    finding, one line naming the session and the error, and an unknown outcome to ask again
    (only a worker holding the run in its cache can answer); any other query failure stays
    as Temporal raised it."""
    text = ("[TMPRL1100] Nondeterminism error: Update machine does not handle this event: "
            "HistoryEvent(id: 46, ActivityTaskScheduled)")
    seen: list[tuple[str, str]] = []

    async def failed(message: str) -> None:
        raise WorkflowQueryFailedError(message)

    async def scenario() -> None:
        api = sessions(5.0)
        api.wedged = lambda session_id, line: seen.append((session_id, line))
        with pytest.raises(Wedged) as wedged:
            await api._call("get_agent_snapshot", lambda client: failed(text), "s2")
        assert isinstance(wedged.value, ServerUnavailable)
        assert str(wedged.value).startswith("get_agent_snapshot: session s2: its workflow no "
                                            "longer replays")
        with pytest.raises(WorkflowQueryFailedError, match="handler raised"):
            await api._call("get_agent_snapshot", lambda client: failed("handler raised"), "s2")

    asyncio.run(scenario())
    assert len(seen) == 1
    session_id, line = seen[0]
    assert session_id == "s2"
    assert text in line
    assert "\n" not in line
    assert wedged_notes(dict(seen)) == [
        f"engine finding: Temporal wedged {line}; only a worker still holding the run in its "
        "cache can carry the session on"]
