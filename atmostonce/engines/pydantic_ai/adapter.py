"""The Pydantic AI adapter: the mapping's worker processes on the Temporal dev server behind the
`Engine` protocol, so `atmostonce chaos --engine atmostonce.engines.pydantic_ai:VARIANT` runs and
hurts them like any engine.

It is the Temporal adapter (`temporal.adapter.TemporalEngine`: the dev server on SQLite, its
SIGKILL and restart, each worker behind a TCP proxy, the histories read at the end) with
Pydantic AI's workers in place of the Temporal mapping's: every worker process runs the
session workflows and every activity, as Pydantic AI's guide deploys them, so there is no
separate session worker. The server log reads the same histories, finding the tool calls among
Pydantic AI's activities by their input (`ACTIVITIES`: the call's key is in the run's deps),
and the hand-outs Temporal's history drops in the workers' events files (`tools`).

What the mapping cannot show is declared in `limits()`: Temporal's own limits, and that a
Pydantic AI tool has no lease (D-12), so a paused worker's run goes on when it wakes.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import (
    ActivityTaskCompletedEventAttributes,
    ActivityTaskScheduledEventAttributes,
)

from atmostonce.engines.adapter import EngineSetup, Limits, SessionAPI
from atmostonce.engines.pydantic_ai import mapping
from atmostonce.engines.pydantic_ai.workflows import WORKFLOW
from atmostonce.engines.temporal import mapping as temporal_mapping
from atmostonce.engines.temporal.adapter import (
    CONNECT_TIMEOUT,
    READY,
    REQUEST_TIMEOUT,
    TemporalEngine,
)
from atmostonce.engines.temporal.adapter import (
    NOT_CHECKABLE as TEMPORAL_NOT_CHECKABLE,
)
from atmostonce.engines.temporal.client import TemporalSessions
from atmostonce.engines.temporal.server_log import Activities
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PropertyId

CALL_TOOL = f"__toolset__{mapping.TOOLSET_ID}__call_tool"
"""How the name of the agent's tool-call activity ends (Pydantic AI's naming)."""
RETURNED = ("tool_return", "tool_content_result")
"""The kinds of a tool-call activity's result for a tool that returned."""

NOT_CHECKABLE: dict[str, str] = {
    **TEMPORAL_NOT_CHECKABLE,
    PropertyId.A_FENCE: "the mapping has no fence (D-6): neither Pydantic AI nor Temporal "
    "offers one, and the Pydantic AI engine refuses --fence",
}
"""The properties this engine cannot give evidence for, and why: Temporal's own (its history
keeps only the last attempt, no heartbeats), and no fence."""


class PydanticSessions(TemporalSessions):
    """The Temporal mapping's session API, on the Pydantic AI session workflow."""

    workflow = WORKFLOW
    task_queue = mapping.TASK_QUEUE


def _decoded(payload: Payload) -> Any:
    try:
        return json.loads(payload.data)
    except ValueError:
        return None


def call_of(a: ActivityTaskScheduledEventAttributes) -> tuple[str, str] | None:
    """The key and tool of a tool-call activity, from its input (the call's params and the
    run's deps); None for Pydantic AI's other activities (model requests)."""
    if not a.activity_type.name.endswith(CALL_TOOL) or len(a.input.payloads) < 2:
        return None
    params, deps = (_decoded(p) for p in a.input.payloads[:2])
    if not isinstance(params, dict) or not isinstance(deps, dict):
        return None
    context, calls = params.get("serialized_run_context"), deps.get("calls")
    if not isinstance(context, dict) or not isinstance(calls, dict):
        return None
    plan = calls.get(context.get("tool_call_id", ""))
    if not isinstance(plan, dict):
        return None
    return str(plan.get("key", "")), str(params.get("name", ""))


def returned(c: ActivityTaskCompletedEventAttributes) -> bool:
    """Whether a completed tool-call activity's tool returned, rather than raised `ToolFailed`."""
    result = _decoded(c.result.payloads[0]) if c.result.payloads else None
    return isinstance(result, dict) and result.get("kind") in RETURNED


ACTIVITIES = Activities(call_of, returned)


class PydanticAIEngine(TemporalEngine):
    """Pydantic AI's workers on the Temporal dev server (see the module docstring)."""

    loop_name = "atmostonce-pydantic-ai"
    worker_module = "atmostonce.engines.pydantic_ai.worker"
    activities = ACTIVITIES

    def __init__(self, setup: EngineSetup, variant: mapping.Variant) -> None:
        if setup.config.fence:
            raise SpecError("the Pydantic AI engine has no fence (D-6): neither Pydantic AI nor "
                            "Temporal offers one and the mapping adds none; run without --fence")
        super().__init__(setup, temporal_mapping.Variant(variant.name))
        self.pydantic_variant = variant

    def describe(self) -> str:
        config = ("a per-tool ActivityConfig from each call's policy"
                  if self.pydantic_variant.per_call_config
                  else "Pydantic AI's default activity config for every tool")
        return (f"Pydantic AI {version('pydantic-ai-slim')} on Temporal (dev server "
                f"{self.server.address} on SQLite), the {self.pydantic_variant.name} variant: "
                f"an Agent with TemporalDurability per session workflow, {config}, approvals "
                f"as deferred tools; workers running the workflows and activities, each behind "
                f"a TCP proxy")

    def limits(self) -> Limits:
        return Limits(dict(NOT_CHECKABLE), attempts_survive_restart=True,
                      pauses_stop_runs=False)

    def start(self) -> None:
        self.server.start()
        launched = [self._launch() for _ in range(self.setup.workers)]
        for worker in launched:
            self._ready(worker)
        self.loop.run(PydanticSessions(self.server.address, self.settings).start_registry(),
                      timeout=READY)

    def _worker_args(self, server: str, wid: str, events: Path) -> list[str]:
        return ["--server", server, "--ledger", self.setup.ledger,
                "--token-file", str(self.token_file), "--name", wid, "--events", str(events)]

    def client(self) -> SessionAPI:
        return PydanticSessions(self.server.address, self.settings,
                                connect_timeout=CONNECT_TIMEOUT,
                                request_timeout=REQUEST_TIMEOUT, opened=self._opened.add,
                                wedged=self._wedge)


def engine_of(variant: str, setup: EngineSetup) -> PydanticAIEngine:
    return PydanticAIEngine(setup, mapping.VARIANTS[variant])
