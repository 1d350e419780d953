"""The Restate services of the mapping, as an application team would write them from the page and
Restate's documentation:

- `ToolPolicies`, a virtual object (key `registry`): each tool's policy statement, changed by
  `set_policy` and read by the shared `statement`; a change applies to calls asked after it.
- `AgentSession`, a virtual object per session (key: the session id): `open`, `ask` (resolves
  the call's effective policy from the registry and the session's default, keeps it with the
  call, TC-SNAP-1, and starts the call's `ToolCall` workflow with a one-way send), `answer`,
  `user_message`, and the calls' ends (`approved`, `record`); `snapshot` and `events_after` are
  shared handlers, so reading never waits for a call.
- `ToolCall`, a workflow per call (key: the call's idempotency key, so a call runs in one
  workflow only): the approval as a durable promise raced against a durable sleep of the
  remaining deadline (`restate.select`), then the tool in one `ctx.run` with the attempts
  `mapping.plan` gives, then the record sent back to the session.

The tool itself runs in the `ctx.run` closure (`tools.run_attempt`), in whichever worker process
Restate invoked.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import restate
from restate import RunOptions, TerminalError

from atmostonce.engines.restate import mapping, tools
from atmostonce.engines.restate.payloads import config_of, policy_of
from atmostonce.spec.approval import (
    REPLY_TEXT,
    ApprovalEvent,
    ApprovalReply,
    ApprovalState,
    initial_approval,
)
from atmostonce.spec.approval import answer as approval_answer
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import EffectClass, EffectivePolicy, PolicySource, resolve_policy
from atmostonce.spec.records import Outcome, Record, RejectReason, rejected
from atmostonce.spec.session import MessageRole, ToolCallStatus, tool_result_text

Json = dict[str, Any]
REGISTRY = "registry"
ANSWER = "answer"
"""The name of a call's durable promise: the first answer, or the deadline."""

policies = restate.VirtualObject("ToolPolicies")
session = restate.VirtualObject("AgentSession")
tool_call = restate.Workflow("ToolCall")


@policies.handler()
async def set_policy(ctx: restate.ObjectContext, change: Json) -> None:
    try:
        policy_of(change["statement"])
    except (SpecError, KeyError, TypeError) as error:
        raise TerminalError(f"bad policy: {error}", 400) from None
    ctx.set(f"tool:{change['tool']}", change["statement"])


@policies.handler(kind="shared")
async def statement(ctx: restate.ObjectSharedContext, tool: str) -> Json:
    found = await ctx.get(f"tool:{tool}", type_hint=dict)
    return found or {}


@session.handler()
async def open_session(ctx: restate.ObjectContext, start: Json) -> None:
    if await ctx.get("settings", type_hint=dict) is None:
        ctx.set("settings", start["settings"])
        ctx.set("default_effect", start.get("default_effect"))


@session.handler()
async def ask(ctx: restate.ObjectContext, given: Json) -> str:
    """Take the call and start its workflow; the call's key. Asking again changes nothing."""
    settings = await ctx.get("settings", type_hint=dict)
    if settings is None:
        raise TerminalError(f"no session {ctx.key()} was opened", 404)
    try:
        key = build_key(ctx.key(), given["turn_id"], given["tool_call_id"])
    except SpecError as error:
        raise TerminalError(str(error), 400) from None
    calls: Json = await ctx.get("calls", type_hint=dict) or {}
    if key in calls:
        return key
    found = await ctx.object_call(statement, key=REGISTRY, arg=given["tool"])
    policy, hints = policy_of(found)
    default = await ctx.get("default_effect", type_hint=str)
    effective = resolve_policy(policy, hints, EffectClass.parse(default) if default else None)
    config = config_of(settings)
    run = mapping.plan(effective, config)
    asked_at = await ctx.time()
    waiting = initial_approval(effective.requires_approval) is ApprovalState.WAITING
    calls[key] = {"turn_id": given["turn_id"], "tool_call_id": given["tool_call_id"],
                  "tool": given["tool"], "arguments": given.get("arguments", "{}"),
                  "status": (ToolCallStatus.AWAITING_APPROVAL if waiting
                             else ToolCallStatus.RUNNING).value,
                  "error": "", "deadline": asked_at + config.approval_deadline,
                  "requires_approval": waiting}
    ctx.set("calls", calls)
    job = {"key": key, "session": ctx.key(), "tool": given["tool"],
           "arguments": given.get("arguments", "{}"), "effect": effective.effect.value,
           "requires_approval": effective.requires_approval,
           "source": effective.source.value, "max_attempts": run.max_attempts,
           "retry_interval": run.retry_interval, "deadline": asked_at + config.approval_deadline,
           "cancel_records_failed": config.cancel_records_failed}
    ctx.workflow_send(run_call, key=key, arg=job)
    return key


@session.handler()
async def answer(ctx: restate.ObjectContext, given: Json) -> Json:
    """A person's approval or rejection, answered by D-7's table; the call's workflow takes
    it."""
    calls: Json = await ctx.get("calls", type_hint=dict) or {}
    call = calls.get(given["key"])
    if call is None:
        return {"accepted": False, "text": f"no call {given['key']} in this session"}
    event = ApprovalEvent.APPROVE if given["approve"] else ApprovalEvent.REJECT
    if not call["requires_approval"]:
        _, reply = approval_answer(ApprovalState.NOT_REQUIRED, event)
        return {"accepted": False, "text": REPLY_TEXT[reply]}
    out: Json = await ctx.workflow_call(take_answer, key=given["key"], arg={
        "approve": bool(given["approve"]), "deadline": call["deadline"]})
    return out


@session.handler()
async def approved(ctx: restate.ObjectContext, key: str) -> None:
    calls: Json = await ctx.get("calls", type_hint=dict) or {}
    if key in calls and calls[key]["status"] == ToolCallStatus.AWAITING_APPROVAL.value:
        calls[key]["status"] = ToolCallStatus.RUNNING.value
        ctx.set("calls", calls)


@session.handler()
async def record(ctx: restate.ObjectContext, done: Json) -> None:
    """The call's one record: a tool result for the model and a finished event."""
    calls: Json = await ctx.get("calls", type_hint=dict) or {}
    call = calls.get(done["key"])
    if call is None or call.get("record"):
        return
    outcome = Outcome(Record(done["record"]), done["error"])
    status = ToolCallStatus.of_record(outcome.record).value
    call.update(record=done["record"], status=status, error=done["error"])
    ctx.set("calls", calls)
    messages: list[Json] = await ctx.get("messages", type_hint=list) or []
    messages.append({"role": MessageRole.TOOL.value, "text": "", "turn_id": call["turn_id"],
                     "tool_call_id": call["tool_call_id"],
                     "tool_output": tool_result_text(outcome, done["output"]),
                     "tool_arguments": call["arguments"]})
    ctx.set("messages", messages)
    events: list[Json] = await ctx.get("events", type_hint=list) or []
    events.append({"session_id": ctx.key(), "turn_id": call["turn_id"],
                   "tool_call_id": call["tool_call_id"], "status": status,
                   "error": done["error"]})
    ctx.set("events", events)


@session.handler()
async def user_message(ctx: restate.ObjectContext, text: str) -> bool:
    messages: list[Json] = await ctx.get("messages", type_hint=list) or []
    messages.append({"role": MessageRole.USER.value, "text": text})
    ctx.set("messages", messages)
    return True


@session.handler(kind="shared")
async def snapshot(ctx: restate.ObjectSharedContext) -> Json:
    calls: Json = await ctx.get("calls", type_hint=dict) or {}
    return {"session_id": ctx.key(), "opened": await ctx.get("settings", type_hint=dict)
            is not None,
            "tool_calls": [{"turn_id": c["turn_id"], "tool_call_id": c["tool_call_id"],
                            "tool": c["tool"], "status": c["status"], "error": c["error"],
                            "idempotency_key": key} for key, c in calls.items()],
            "messages": await ctx.get("messages", type_hint=list) or []}


@session.handler(kind="shared")
async def events_after(ctx: restate.ObjectSharedContext, seen: int) -> list[Json]:
    events: list[Json] = await ctx.get("events", type_hint=list) or []
    return events[max(0, seen):]


@tool_call.main()
async def run_call(ctx: restate.WorkflowContext, job: Json) -> None:
    """One call: its approval, its `ctx.run`, its record (see the module docstring)."""
    key = job["key"]
    effective = EffectivePolicy(EffectClass(job["effect"]), job["requires_approval"],
                                PolicySource(job["source"]))
    if job["requires_approval"]:
        state = await _await_answer(ctx, key, job["deadline"])
        if state in (ApprovalState.REJECTED, ApprovalState.EXPIRED):
            reason = (RejectReason.DEADLINE if state is ApprovalState.EXPIRED
                      else RejectReason.PERSON)
            _send_record(ctx, job, rejected(reason), "")
            return
        ctx.object_send(approved, key=job["session"], arg=key)
    run = mapping.RunPlan(job["max_attempts"], job["retry_interval"])
    options: RunOptions[Json] = RunOptions(
        max_attempts=run.max_attempts,
        initial_retry_interval=timedelta(seconds=run.retry_interval),
        retry_interval_factor=1.0, type_hint=dict)
    try:
        result = await ctx.run_typed("tool", tools.run_attempt, options, key, job["tool"],
                                     job["arguments"])
    except TerminalError as error:
        outcome = mapping.outcome(effective, run, None, str(error),
                                  job["cancel_records_failed"])
        _send_record(ctx, job, outcome, str(error))
        return
    ok, output = bool(result["ok"]), str(result["output"])
    _send_record(ctx, job, mapping.outcome(effective, run, ok, output,
                                           job["cancel_records_failed"]), output)


async def _await_answer(ctx: restate.WorkflowContext, key: str, deadline: float
                        ) -> ApprovalState:
    """The first answer, or the deadline, whichever the call's promise takes first (D-7)."""
    promise = ctx.promise(ANSWER, type_hint=dict)
    remaining = deadline - await ctx.time()
    await ctx.run_typed("deadline timer", tools.note, RunOptions(type_hint=bool),
                        "timer_started", key)
    if remaining > 0:
        await restate.select(answer=promise.value(),
                             deadline=ctx.sleep(timedelta(seconds=remaining)))
    try:
        await promise.resolve({"deadline": True})
    except TerminalError:
        pass
    else:
        await ctx.run_typed("deadline fired", tools.note, RunOptions(type_hint=bool),
                            "timer_fired", key)
    return _state_of(await promise.value())


@tool_call.handler()
async def take_answer(ctx: restate.WorkflowSharedContext, given: Json) -> Json:
    """An answer to the call's approval: it takes the promise unless the deadline or an earlier
    answer took it first; the reply by D-7's table. The answer is taken at `now`, the moment
    the handler judged the deadline by, which is before the promise is resolved and so before
    the call's workflow can run the tool."""
    promise = ctx.promise(ANSWER, type_hint=dict)
    now = await ctx.time()
    mine: Json = {"deadline": True} if now >= given["deadline"] else {
        "approve": bool(given["approve"])}
    try:
        await promise.resolve(mine)
        took = True
        before = ApprovalState.WAITING if "approve" in mine else ApprovalState.EXPIRED
    except TerminalError:
        took = False
        before = _state_of(await promise.value())
    event = ApprovalEvent.APPROVE if given["approve"] else ApprovalEvent.REJECT
    _, reply = approval_answer(before, event)
    if took and before is ApprovalState.EXPIRED:
        await ctx.run_typed("deadline found passed", tools.note, RunOptions(type_hint=bool),
                            "timer_fired", ctx.key())
    if reply is ApprovalReply.ACCEPTED:
        await ctx.run_typed("answer taken", tools.note, RunOptions(type_hint=bool),
                            "answer_taken", ctx.key(), bool(given["approve"]), now)
    return {"accepted": reply is ApprovalReply.ACCEPTED, "text": REPLY_TEXT[reply]}


def _state_of(value: Json | None) -> ApprovalState:
    if not value or value.get("deadline"):
        return ApprovalState.EXPIRED
    return ApprovalState.APPROVED if value.get("approve") else ApprovalState.REJECTED


def _send_record(ctx: restate.WorkflowContext, job: Json, outcome: Outcome, output: str
                 ) -> None:
    ctx.object_send(record, key=job["session"], arg={
        "key": job["key"], "record": outcome.record.value, "error": outcome.error,
        "output": output})


SERVICES = (policies, session, tool_call)
