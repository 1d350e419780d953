"""The agent of each variant, built as Pydantic AI's durable-execution guide shows: an `Agent`
with the `TemporalDurability` capability, defined at module level so that the workers register
its activities (`PydanticAIPlugin`) before a workflow runs it.

- The model is a `FunctionModel` that answers from the script in the turn's user prompt
  (`mapping.script`): all the turn's calls in one response, then, once their tool returns are
  in, a text that ends the run. It is the only scripted part; it runs in Pydantic AI's
  model-request activity like any model.
- The tools are the demo tools (`tools`), behind `ApprovalRequiredToolset` (deferred tools):
  a call whose policy kept at ask time wants approval is deferred, so the run ends with
  `DeferredToolRequests`.
- `recommended` gives each tool, through its `prepare` function (run in workflow code, once per
  step), the per-tool `ActivityConfig` of its call in the tool's `'temporal'` metadata, which
  `TemporalDurability` merges over its base config. `defaults` leaves every tool on the base
  config: 60 s start-to-close and Temporal's default retry policy.
- `Records`, a capability, turns a tool activity that Temporal gave up on into the call's
  record (`on_tool_execute_error`, in workflow code), as `ToolFailed` so that the model reads
  it: Pydantic AI has no outcome_unknown, and without it the error would end the agent run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, RunContext, ToolFailed
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import ToolDefinition
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.workflow import ActivityConfig

from atmostonce.engines.pydantic_ai import mapping
from atmostonce.engines.pydantic_ai.scripted import scripted
from atmostonce.engines.pydantic_ai.tools import toolset
from atmostonce.engines.temporal import mapping as temporal_mapping
from atmostonce.engines.temporal.workflows import ending_of
from atmostonce.spec.session import tool_result_text


def activity_config(plan: mapping.CallPlan) -> ActivityConfig:
    """A call's per-tool activity config (`recommended`)."""
    config = ActivityConfig(
        start_to_close_timeout=timedelta(seconds=plan.start_to_close),
        retry_policy=RetryPolicy(initial_interval=timedelta(seconds=plan.retry_interval),
                                 backoff_coefficient=1.0,
                                 maximum_attempts=plan.maximum_attempts))
    if plan.heartbeat is not None:
        config["heartbeat_timeout"] = timedelta(seconds=plan.heartbeat)
    if plan.schedule_to_start is not None:
        config["schedule_to_start_timeout"] = timedelta(seconds=plan.schedule_to_start)
    return config


async def per_call_config(ctx: RunContext[mapping.TurnDeps], tool_def: ToolDefinition
                          ) -> ToolDefinition:
    """The tool's definition with its call's activity config in its `'temporal'` metadata."""
    plan = ctx.deps.plan_for_tool(tool_def.name)
    if plan is None:
        return tool_def
    return replace(tool_def, metadata={**(tool_def.metadata or {}),
                                       "temporal": activity_config(plan)})


def needs_approval(ctx: RunContext[mapping.TurnDeps], tool_def: ToolDefinition,
                   arguments: dict[str, Any]) -> bool:
    """Whether the call's policy kept at ask time wants approval."""
    plan = ctx.deps.calls.get(ctx.tool_call_id or "")
    return plan is not None and plan.requires_approval


@dataclass
class Records(AbstractCapability[mapping.TurnDeps]):
    """A tool activity Temporal gave up on becomes its call's record (see the module
    docstring): the page's decision from how the last attempt ended (`temporal.mapping`)."""

    async def on_tool_execute_error(self, ctx: RunContext[mapping.TurnDeps], *,
                                    call: ToolCallPart, tool_def: ToolDefinition,
                                    args: Any, error: Exception) -> Any:
        plan = ctx.deps.calls.get(call.tool_call_id)
        if not isinstance(error, ActivityError) or plan is None:
            raise error
        policy = plan.policy()
        ending, text = ending_of(error)
        activity = temporal_mapping.ActivityPlan(
            policy.step, max(1, plan.maximum_attempts), plan.retry_interval,
            plan.schedule_to_start or 0.0, plan.start_to_close, plan.heartbeat or 0.0)
        outcome = temporal_mapping.outcome(policy, activity, ending, text,
                                           ctx.deps.cancel_records_failed)
        raise ToolFailed(tool_result_text(outcome))


def agent(variant: mapping.Variant) -> Agent[mapping.TurnDeps, str | DeferredToolRequests]:
    """The variant's agent (see the module docstring)."""
    tools = toolset(per_call_config if variant.per_call_config else None)
    return Agent(FunctionModel(scripted, model_name="atmostonce-scripted"), name=variant.agent,
                 deps_type=mapping.TurnDeps, output_type=[str, DeferredToolRequests],
                 toolsets=[tools.approval_required(needs_approval)],
                 capabilities=[Records(), TemporalDurability()])


AGENTS = {name: agent(variant) for name, variant in mapping.VARIANTS.items()}
"""Each variant's agent by the variant's name."""
