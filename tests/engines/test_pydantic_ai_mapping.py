"""The Pydantic AI mapping's rules without a server: each variant's activity options per effect
class, the scripted model's answers, the record read from a tool return, the record the
`Records` capability makes of an activity Temporal gave up on, how the server log finds the
calls among Pydantic AI's activities, and what the engine declares it cannot show."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest

pytest.importorskip("pydantic_ai.durable_exec.temporal")

from pydantic_ai import RunContext, ToolFailed
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RunUsage
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import (
    ActivityTaskCompletedEventAttributes,
    ActivityTaskScheduledEventAttributes,
)
from temporalio.exceptions import ActivityError, RetryState, TimeoutError, TimeoutType

from atmostonce.engines.adapter import EngineSetup, limits_of
from atmostonce.engines.pydantic_ai import agents, mapping, scripted
from atmostonce.engines.pydantic_ai.adapter import NOT_CHECKABLE, call_of, engine_of, returned
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy, resolve_policy
from atmostonce.spec.properties import PROPERTIES, PropertyId
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import OUTCOME_UNKNOWN_ERROR, Record, RejectReason, reject_text
from atmostonce.spec.session import OUTCOME_UNKNOWN_TOOL_RESULT

CONFIG = ExecutorConfig(max_attempts=3, retry_backoff=0.2, queue_timeout=10.0, run_timeout=3.0,
                        heartbeat_timeout=2.5, lease=1.0)
E = EffectClass


def plan(variant: mapping.Variant, effect: EffectClass, tool: str = "cancel_order"
         ) -> mapping.CallPlan:
    return mapping.plan(variant, f"s1/t1/{tool}", tool, resolve_policy(ToolPolicy(effect)),
                        CONFIG)


@pytest.mark.parametrize("effect", list(EffectClass))
def test_defaults_give_every_class_pydantic_ais_base_config(effect: EffectClass) -> None:
    """No effect classes in Pydantic AI: 60 s and Temporal's default policy (0: unlimited)."""
    p = plan(mapping.DEFAULTS, effect)
    assert (p.maximum_attempts, p.start_to_close, p.heartbeat, p.schedule_to_start) \
        == (0, mapping.DEFAULT_START_TO_CLOSE, None, None)


@pytest.mark.clause("TC-POL-2", "TC-EFF-NONIDEM")
@pytest.mark.parametrize(("effect", "attempts"), [
    (E.READ, 3), (E.IDEMPOTENT_WRITE, 3), (E.NON_IDEMPOTENT_WRITE, 1), (E.UNCLASSIFIED, 1)])
def test_recommended_gives_a_single_attempt_call_maximum_attempts_one(
        effect: EffectClass, attempts: int) -> None:
    p = plan(mapping.RECOMMENDED, effect)
    assert (p.maximum_attempts, p.start_to_close, p.heartbeat, p.schedule_to_start,
            p.retry_interval) == (attempts, 3.0, 2.5, 10.0, 0.2)
    config = agents.activity_config(p)
    assert config["start_to_close_timeout"] == timedelta(seconds=3.0)
    assert config["heartbeat_timeout"] == timedelta(seconds=2.5)
    retry = config["retry_policy"]
    assert retry is not None
    assert retry.maximum_attempts == attempts


def context(deps: mapping.TurnDeps, tool_call_id: str | None = None
            ) -> RunContext[mapping.TurnDeps]:
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage(),
                      tool_call_id=tool_call_id)


def test_recommended_puts_the_calls_config_in_the_tools_temporal_metadata() -> None:
    p = plan(mapping.RECOMMENDED, E.NON_IDEMPOTENT_WRITE)
    deps = mapping.TurnDeps("s1", "t1", {"c1": p})
    prepared = asyncio.run(agents.per_call_config(
        context(deps), ToolDefinition(name="cancel_order", metadata={"other": 1})))
    assert prepared.metadata == {"other": 1, "temporal": agents.activity_config(p)}
    other = asyncio.run(agents.per_call_config(context(deps),
                                               ToolDefinition(name="lookup_order")))
    assert other.metadata is None


def test_approval_is_required_exactly_for_calls_whose_kept_policy_wants_it() -> None:
    wants = plan(mapping.DEFAULTS, E.IDEMPOTENT_WRITE, "refund")
    wants.requires_approval = True
    deps = mapping.TurnDeps("s1", "t1", {"c1": wants,
                                         "c2": plan(mapping.DEFAULTS, E.READ, "lookup_order")})
    tool = ToolDefinition(name="refund")
    assert agents.needs_approval(context(deps, "c1"), tool, {})
    assert not agents.needs_approval(context(deps, "c2"), tool, {})
    assert not agents.needs_approval(context(deps, "c9"), tool, {})


def test_the_scripted_model_answers_a_turn_with_its_calls_then_ends_it() -> None:
    prompt = mapping.script([("c1", "lookup_order", '{"n": 1}'), ("c2", "refund", "{}")])
    info = AgentInfo(function_tools=[], allow_text_output=True, output_tools=[],
                     model_settings=None, model_request_parameters=ModelRequestParameters(),
                     instructions=None)
    calls = scripted.scripted([ModelRequest(parts=[UserPromptPart(prompt)])], info)
    assert [(p.tool_call_id, p.tool_name, p.args) for p in calls.parts
            if isinstance(p, ToolCallPart)] == [("c1", "lookup_order", {"n": 1}),
                                                ("c2", "refund", {})]
    done = scripted.scripted([ModelRequest(parts=[UserPromptPart(prompt)]), calls,
                            ModelRequest(parts=[ToolReturnPart("lookup_order", "ok", "c1")])],
                           info)
    assert done == ModelResponse(parts=[TextPart(scripted.DONE)], timestamp=done.timestamp)
    assert mapping.scripted_calls("hello") is None


@pytest.mark.clause("TC-REC-SUCC", "TC-REC-REJ", "D-3")
def test_a_tool_return_reads_as_the_record_it_says() -> None:
    assert mapping.record_of(mapping.SUCCESS, "order 7").record is Record.SUCCEEDED
    denied = mapping.record_of(mapping.DENIED, reject_text(RejectReason.DEADLINE))
    assert (denied.record, denied.error) == (Record.REJECTED,
                                             reject_text(RejectReason.DEADLINE))
    failed = mapping.record_of(mapping.FAILED, mapping.tool_failed_text("out of stock"))
    assert failed.record is Record.FAILED
    assert "out of stock" in failed.error
    assert not failed.error.startswith("failed: ")
    unknown = mapping.record_of(mapping.FAILED, f"{OUTCOME_UNKNOWN_TOOL_RESULT}: why")
    assert (unknown.record, unknown.error) == (Record.OUTCOME_UNKNOWN, "why")
    assert mapping.record_of("retried", "bad arguments").record is Record.FAILED


def lost(kind: TimeoutType) -> ActivityError:
    error = ActivityError("activity timed out", scheduled_event_id=5, started_event_id=6,
                          identity="w1", activity_type="call_tool", activity_id="3",
                          retry_state=RetryState.MAXIMUM_ATTEMPTS_REACHED)
    error.__cause__ = TimeoutError("timed out", type=kind, last_heartbeat_details=[])
    return error


def recorded(effect: EffectClass, error: Exception) -> str:
    p = plan(mapping.RECOMMENDED, effect)
    deps = mapping.TurnDeps("s1", "t1", {"c1": p})
    call = ToolCallPart(p.tool, {}, tool_call_id="c1")
    with pytest.raises(ToolFailed) as raised:
        asyncio.run(agents.Records().on_tool_execute_error(
            context(deps, "c1"), call=call, tool_def=ToolDefinition(name=p.tool), args={},
            error=error))
    return raised.value.message


@pytest.mark.clause("TC-REC-LOST", "TC-REC-EXHAUST-READ", "D-4")
def test_an_activity_temporal_gave_up_on_becomes_the_pages_record() -> None:
    unknown = mapping.record_of(mapping.FAILED,
                                recorded(E.NON_IDEMPOTENT_WRITE, lost(TimeoutType.HEARTBEAT)))
    assert unknown.record is Record.OUTCOME_UNKNOWN
    assert unknown.error.startswith(OUTCOME_UNKNOWN_ERROR)
    timed_out = mapping.record_of(mapping.FAILED, recorded(E.UNCLASSIFIED,
                                                           lost(TimeoutType.START_TO_CLOSE)))
    assert timed_out.record is Record.OUTCOME_UNKNOWN
    read = mapping.record_of(mapping.FAILED, recorded(E.READ, lost(TimeoutType.HEARTBEAT)))
    assert read.record is Record.FAILED


def test_any_other_error_is_left_to_pydantic_ai() -> None:
    p = plan(mapping.RECOMMENDED, E.READ)
    deps = mapping.TurnDeps("s1", "t1", {"c1": p})
    with pytest.raises(ValueError, match="boom"):
        asyncio.run(agents.Records().on_tool_execute_error(
            context(deps, "c1"), call=ToolCallPart(p.tool, {}, tool_call_id="c1"),
            tool_def=ToolDefinition(name=p.tool), args={}, error=ValueError("boom")))


def payload(value: object) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(value).encode())


def test_the_server_log_finds_each_tool_call_by_the_key_in_the_runs_deps() -> None:
    scheduled = ActivityTaskScheduledEventAttributes(activity_id="7")
    scheduled.activity_type.name = f"agent__atmostonce_defaults{'__toolset__demo__call_tool'}"
    scheduled.input.payloads.extend([
        payload({"name": "refund", "tool_args": {}, "serialized_run_context": {
            "tool_call_id": "c4"}}),
        payload({"session_id": "s1", "turn_id": "t2", "calls": {"c4": {"key": "s1/t2/c4"}}})])
    assert call_of(scheduled) == ("s1/t2/c4", "refund")
    model = ActivityTaskScheduledEventAttributes(activity_id="8")
    model.activity_type.name = "agent__atmostonce_defaults__model_request"
    assert call_of(model) is None
    done = ActivityTaskCompletedEventAttributes()
    done.result.payloads.append(payload({"kind": "tool_return", "result": "ok"}))
    failed = ActivityTaskCompletedEventAttributes()
    failed.result.payloads.append(payload({"kind": "tool_failed", "message": "failed: x"}))
    assert returned(done)
    assert not returned(failed)


def test_the_engine_declares_what_it_cannot_show_and_that_pauses_do_not_stop_runs(
        tmp_path: object) -> None:
    from pathlib import Path

    setup = EngineSetup(Path(str(tmp_path)), "127.0.0.1:1", CONFIG, 1, "")
    limits = limits_of(engine_of("defaults", setup))
    assert dict(limits.not_checkable) == NOT_CHECKABLE
    assert set(NOT_CHECKABLE) <= set(PROPERTIES)
    assert PropertyId.A_FENCE in NOT_CHECKABLE
    assert limits.attempts_survive_restart
    assert not limits.pauses_stop_runs


def test_the_engine_refuses_the_fence(tmp_path: object) -> None:
    from pathlib import Path

    setup = EngineSetup(Path(str(tmp_path)), "127.0.0.1:1",
                        ExecutorConfig(fence=True), 1, "")
    with pytest.raises(SpecError, match="no fence"):
        engine_of("recommended", setup)


def test_a_session_a_query_found_wedged_is_one_finding_in_the_engines_server_log(
        tmp_path: object) -> None:
    """What the session client reports (`test_temporal_client.py`) reaches the chaos report's
    notes, once per session: the first error names it (P-7)."""
    from pathlib import Path

    from atmostonce.engines.pydantic_ai.adapter import PydanticSessions

    engine = engine_of("recommended", EngineSetup(Path(str(tmp_path)), "127.0.0.1:1", CONFIG,
                                                  1, ""))
    api = engine.client()
    assert isinstance(api, PydanticSessions)
    first = "session s2: its workflow no longer replays on a Temporal worker (first)"
    api.wedged("s2", first)
    api.wedged("s2", "session s2: its workflow no longer replays on a Temporal worker (later)")
    findings = [n for n in engine.server_log().notes if n.startswith("engine finding")]
    assert findings == [f"engine finding: Temporal wedged {first}; only a worker still holding "
                        "the run in its cache can carry the session on"]
