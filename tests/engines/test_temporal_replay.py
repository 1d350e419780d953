"""Temporal's SDK can write a history that it cannot replay (docs/engines.md, P-7): a worker
that holds a run in its cache applies the new events a direct query's task carries (an activity's
completion) outside any workflow task, and sends the commands the workflow issued on them with
the next workflow task, ahead of that task's update. On replay both arrive in one activation and
the SDK runs the update first, so the update's acceptance meets the activity's scheduling.

The history here was written by the installed SDK against a fifteen-line workflow (no Pydantic
AI, no code of ours): the worker was stopped while its activity ran, the dev server restarted,
three queries and an update sent, the activity completed, and the worker resumed."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest

pytest.importorskip("temporalio")

from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

HISTORY = Path(__file__).parent / "histories" / "temporal_update_after_query.json"
MISMATCH = "Update machine does not handle this event: HistoryEvent(id: 11, ActivityTaskScheduled)"
"""The acceptance the replay issues where the worker wrote the activity's scheduling."""


@workflow.defn(name="Mini")
class Mini:
    """Two activities one after the other; an update that counts."""

    def __init__(self) -> None:
        self.pokes = 0

    @workflow.run
    async def run(self) -> int:
        first: int = await workflow.execute_activity(
            "step", 1, start_to_close_timeout=timedelta(seconds=60))
        second: int = await workflow.execute_activity(
            "step", 2, start_to_close_timeout=timedelta(seconds=60))
        return first + second + self.pokes

    @workflow.update
    def poke(self) -> int:
        self.pokes += 1
        return self.pokes


def replay_failure(last_event: int | None = None) -> str:
    """How replaying the history (up to `last_event`) failed; "" when it replays."""
    history = WorkflowHistory.from_json("mini", HISTORY.read_text())
    if last_event is not None:
        history = WorkflowHistory(history.workflow_id, history.events[:last_event])

    async def replay() -> str:
        result = await Replayer(workflows=[Mini], workflow_runner=UnsandboxedWorkflowRunner()
                                ).replay_workflow(history, raise_on_replay_failure=False)
        return "" if result.replay_failure is None else str(result.replay_failure)

    return asyncio.run(replay())


def test_the_sdk_does_not_replay_an_update_it_accepted_after_a_query_applied_new_events() -> None:
    history = WorkflowHistory.from_json("mini", HISTORY.read_text())
    accepted = [e.workflow_execution_update_accepted_event_attributes for e in history.events
                if e.HasField("workflow_execution_update_accepted_event_attributes")]
    update_name = Mini.poke.__name__  # type: ignore[attr-defined]
    assert [a.accepted_request.input.name for a in accepted] == [update_name]
    assert MISMATCH in replay_failure()


def test_the_same_history_replays_up_to_that_workflow_task() -> None:
    """The workflow is deterministic until the task whose commands the cache reordered."""
    assert replay_failure(last_event=9) == ""
