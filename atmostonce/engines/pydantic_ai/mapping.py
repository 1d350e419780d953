"""The Tool Calls page on Pydantic AI over Temporal, as pure rules: the two variants, what a
turn's agent run carries (`TurnDeps`), the activity options of a call, the script the scripted
model reads, and the record a team reads back from a call's tool return. No Pydantic AI or
Temporal import: the rules read plain values, so the workflow (which decides), the tools and
the capability (which write a tool return) and the tests never disagree.

| page                    | Pydantic AI on Temporal                                          |
| ----------------------- | ---------------------------------------------------------------- |
| session (Flow)          | a workflow (id: the session id) running the agent turn by turn   |
| the model's tool calls  | one model response per turn from the scripted `FunctionModel`     |
| tool call               | a tool of the agent's `FunctionToolset`, run by `TemporalDurability` |
|                         | as an activity; key `{session}/{turn}/{tool_call_id}`              |
| `CallTool`              | `defaults`: the base activity config (60 s, Temporal's default     |
|                         | retry policy); `recommended`: per-tool `ActivityConfig` in the     |
|                         | tool's metadata, `maximum_attempts` = max_attempts                |
| `CallSingleAttemptTool` | `defaults`: the same as CallTool (Pydantic AI has no effect        |
|                         | classes); `recommended`: `maximum_attempts=1`                     |
| record                  | the call's `ToolReturnPart`: its outcome and the text the model    |
|                         | reads (`record_of`)                                              |
| approval                | deferred tools: `ApprovalRequiredToolset`, the run ends with       |
|                         | `DeferredToolRequests`, resumed with `DeferredToolResults`         |
| approval deadline       | none in Pydantic AI: the workflow's durable timer, the app's own   |
| worker                  | a Temporal worker process running the workflows and every activity |

A tool return reads as a record this way (`record_of`): outcome `success` is succeeded;
`denied` is rejected, the denial's message (`spec.records.reject_text`) the error; `failed`
that opens with the outcome unknown marker is outcome_unknown; any other is failed, its text
after `failed: ` the error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from atmostonce.spec.policy import DurableStep, EffectClass, EffectivePolicy, PolicySource
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import FailureKind, Outcome, Record, failure_text
from atmostonce.spec.session import OUTCOME_UNKNOWN_TOOL_RESULT, tool_result_text

TASK_QUEUE = "atmostonce-pydantic-ai"
"""The task queue of the session workflows, the policy registry and every activity."""
TOOLSET_ID = "demo"
"""The id of the agent's toolset (Pydantic AI names its activities by it)."""
SCRIPT_KEY = "atmostonce_turn"
"""The key of the user prompt that carries a turn's calls to the scripted model."""
DEFAULT_START_TO_CLOSE = 60.0
"""Pydantic AI's default `start_to_close_timeout` for every activity, in seconds."""
SUCCESS, FAILED, DENIED = "success", "failed", "denied"
"""The `ToolReturnPart` outcomes the mapping reads."""


@dataclass(frozen=True)
class Variant:
    """One way a team builds the page on Pydantic AI's Temporal integration."""

    name: str
    per_call_config: bool
    """Whether each call's activity gets its own `ActivityConfig` from the call's kept policy
    (the per-tool config Pydantic AI's documentation shows), or every tool the base config."""
    agent: str
    """The agent's name, by which Pydantic AI names its activities."""


DEFAULTS = Variant("defaults", False, "atmostonce_defaults")
RECOMMENDED = Variant("recommended", True, "atmostonce_recommended")
VARIANTS = {v.name: v for v in (DEFAULTS, RECOMMENDED)}


@dataclass
class CallPlan:
    """One call of a turn as the agent run carries it in its deps: the key, the policy kept at
    ask time, and the options of its activity. Plain fields: Pydantic AI sends deps to every
    activity."""

    key: str
    tool: str
    effect: str
    requires_approval: bool
    source: str
    maximum_attempts: int
    """0: unlimited (Temporal's default retry policy)."""
    retry_interval: float
    start_to_close: float
    heartbeat: float | None = None
    schedule_to_start: float | None = None

    def policy(self) -> EffectivePolicy:
        return EffectivePolicy(EffectClass.parse(self.effect), self.requires_approval,
                               PolicySource(self.source))


@dataclass
class TurnDeps:
    """The deps of a turn's agent run: the session, the turn, and its calls by tool call id."""

    session_id: str
    turn_id: str
    calls: dict[str, CallPlan] = field(default_factory=dict)
    cancel_records_failed: bool = False
    """D-4's choice the harness declares for a timed-out single attempt."""

    def plan_for_tool(self, tool: str) -> CallPlan | None:
        """The plan of the turn's call of `tool` (a turn calls each tool at most once)."""
        return next((p for p in self.calls.values() if p.tool == tool), None)


def plan(variant: Variant, key: str, tool: str, policy: EffectivePolicy,
         config: ExecutorConfig) -> CallPlan:
    """The plan of a call whose kept policy is `policy`: Pydantic AI's base config under
    `defaults`, the page's options as a per-tool `ActivityConfig` under `recommended`."""
    common = (key, tool, policy.effect.value, policy.requires_approval, policy.source.value)
    if not variant.per_call_config:
        return CallPlan(*common, 0, 1.0, DEFAULT_START_TO_CLOSE)
    attempts = config.max_attempts if policy.step is DurableStep.CALL_TOOL else 1
    return CallPlan(*common, attempts, config.retry_backoff, config.run_timeout,
                    config.heartbeat_timeout, config.queue_timeout)


def script(calls: list[tuple[str, str, str]]) -> str:
    """The user prompt of a turn: its calls as (tool call id, tool, arguments JSON)."""
    return json.dumps({SCRIPT_KEY: [{"id": i, "tool": t, "arguments": json.loads(a or "{}")}
                                    for i, t, a in calls]}, sort_keys=True)


def scripted_calls(prompt: str) -> list[tuple[str, str, dict[str, Any]]] | None:
    """The calls a user prompt scripts, or None for a prompt that is no script."""
    try:
        parsed = json.loads(prompt)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get(SCRIPT_KEY), list):
        return None
    return [(str(c["id"]), str(c["tool"]), dict(c.get("arguments") or {}))
            for c in parsed[SCRIPT_KEY]]


def tool_arguments(given: dict[str, Any]) -> str:
    """The arguments JSON of a tool function's call, from the arguments the model gave."""
    return json.dumps({k: v for k, v in given.items() if v is not None}, sort_keys=True)


def tool_failed_text(output: str) -> str:
    """The tool return of a failure the tool reported (D-3): failed, never retried."""
    return tool_result_text(Outcome(Record.FAILED, failure_text(FailureKind.TOOL_ERROR, output)))


def record_of(outcome: str, text: str) -> Outcome:
    """The record a team reads from a call's tool return (see the module docstring)."""
    if outcome == SUCCESS:
        return Outcome(Record.SUCCEEDED, "")
    marker = f"{OUTCOME_UNKNOWN_TOOL_RESULT}: "
    if outcome == FAILED and text.startswith(marker):
        return Outcome(Record.OUTCOME_UNKNOWN, text[len(marker):])
    if outcome == DENIED:
        return Outcome(Record.REJECTED, text)
    prefix = f"{Record.FAILED.value}: "
    return Outcome(Record.FAILED, text[len(prefix):] if text.startswith(prefix) else text)
