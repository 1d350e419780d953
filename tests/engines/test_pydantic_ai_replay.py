"""The session workflow that a chaos run's session s2 wedged (`test_temporal_replay.py` has the
same fault in Temporal's SDK without Pydantic AI): its worker wrote event 46, the model request
after a tool call's completion, ahead of event 47, the acceptance of an `answer` update that
arrived in the same workflow task, because a query had already applied the tool's completion to
the cached run; every later replay runs the update first and fails, so the session's queries
and tasks fail on any worker without the run in its cache (docs/engines.md, P-7)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai.durable_exec.temporal")

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from atmostonce.engines.pydantic_ai.workflows import PydanticSession
from atmostonce.engines.temporal.worker import RUNNER

HISTORY = Path(__file__).parent / "histories" / "pydantic_session_update_after_query.json"
"""Session s2's first 50 events, exported from the dev server's database the run kept."""
MISMATCH = "Update machine does not handle this event: HistoryEvent(id: 46, ActivityTaskScheduled)"


def replay_failure(last_event: int | None = None) -> str:
    """How replaying the history (up to `last_event`) failed; "" when it replays."""
    history = WorkflowHistory.from_json("s2", HISTORY.read_text())
    if last_event is not None:
        history = WorkflowHistory(history.workflow_id, history.events[:last_event])

    async def replay() -> str:
        replayer = Replayer(workflows=[PydanticSession], workflow_runner=RUNNER,
                            plugins=[PydanticAIPlugin()])
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        return "" if result.replay_failure is None else str(result.replay_failure)

    return asyncio.run(replay())


def test_the_wedged_session_fails_to_replay_where_the_update_met_the_model_request() -> None:
    assert MISMATCH in replay_failure()


def test_the_session_replays_up_to_that_workflow_task() -> None:
    """Our workflow replays every earlier task: two asks, an approval answered, a deadline
    passed, a model request and a tool call."""
    assert replay_failure(last_event=44) == ""
