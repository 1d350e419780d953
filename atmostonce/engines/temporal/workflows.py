"""The two workflows of the Temporal mapping: an agent session, and the registry of tool
policies.

`AgentSession` is one session (the page's Flow): its workflow id is the session id. The model's
tool calls arrive as `ask` updates (the update id is made from the call's key, so an ask sent
again is the same ask); the call's effective policy is resolved at that moment, from the tool's
statement in the registry that the client read just before and the session's default effect,
and kept with the call (TC-SNAP-1). A call that waits for approval waits on a durable timer of
the approval deadline, which `answer` updates race (D-7, decided by the spec's table; an answer
the workflow reads at or after the deadline finds it passed, however the timer and the answer
were batched). Then the call runs as one activity with the options `mapping.plan` gives, and its
record comes from how the activity ended (`mapping.outcome`). Records join the message history
as tool results and the session's AgentEvents stream as `tool_call_finished` events;
`snapshot` and `events_after` are queries, `user_message` is an update (TC-RCN-TELL).

`ToolPolicies` holds each tool's policy statement, changed by `set_policy` updates and read by
the `statement` query; a change applies to calls asked after it (TC-SNAP-2).

Both run until the server is stopped: a session takes turns as long as the agent talks to it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

with workflow.unsafe.imports_passed_through():
    from atmostonce.engines.temporal import mapping
    from atmostonce.engines.temporal.payloads import (
        AnswerInput,
        AnswerOutput,
        AskInput,
        CallView,
        EventView,
        MessageView,
        PolicyChange,
        SessionStart,
        SnapshotView,
        Statement,
        ToolJob,
        effect_of,
        policy_of,
    )
    from atmostonce.spec.approval import (
        REPLY_TEXT,
        ApprovalEvent,
        ApprovalReply,
        ApprovalState,
        initial_approval,
        is_rejection,
    )
    from atmostonce.spec.approval import (
        answer as approval_answer,
    )
    from atmostonce.spec.errors import SpecError
    from atmostonce.spec.keys import build_key
    from atmostonce.spec.policy import EffectivePolicy, resolve_policy
    from atmostonce.spec.records import Outcome, RejectReason, rejected
    from atmostonce.spec.session import MessageRole, ToolCallStatus, tool_result_text

_TIMEOUTS = {
    TimeoutType.SCHEDULE_TO_START: mapping.TimeoutKind.SCHEDULE_TO_START,
    TimeoutType.START_TO_CLOSE: mapping.TimeoutKind.START_TO_CLOSE,
    TimeoutType.HEARTBEAT: mapping.TimeoutKind.HEARTBEAT,
    TimeoutType.SCHEDULE_TO_CLOSE: mapping.TimeoutKind.SCHEDULE_TO_CLOSE,
}


def deadline_summary(key: str) -> str:
    """The summary of a call's approval-deadline timer, by which the history names it."""
    return f"approval deadline {key}"


def ending_of(error: ActivityError) -> tuple[mapping.Ending, str]:
    """What Temporal reported about a failed activity, and the text to show for it."""
    cause = error.cause
    started = error.started_event_id != 0
    if isinstance(cause, ApplicationError) and cause.type == mapping.TOOL_FAILED_TYPE:
        return mapping.Ending(tool_failed=True, started=started), cause.message
    if isinstance(cause, ActivityTimeout):
        kind = _TIMEOUTS.get(cause.type) if cause.type is not None else None
        return mapping.Ending(timeout=kind, earlier_failure=cause.cause is not None,
                              started=started), str(cause)
    return mapping.Ending(started=started), str(cause or error)


@dataclass
class _Call:
    key: str
    ask: AskInput
    policy: EffectivePolicy
    asked_at: float
    approval: ApprovalState
    outcome: Outcome | None = None


@workflow.defn(name="ToolPolicies")
class ToolPolicies:
    """The tool policy registry (see the module docstring)."""

    def __init__(self) -> None:
        self.statements: dict[str, Statement] = {}

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)

    @workflow.update
    def set_policy(self, change: PolicyChange) -> None:
        self.statements[change.tool] = change.statement

    @set_policy.validator
    def _check_policy(self, change: PolicyChange) -> None:
        try:
            policy_of(change.statement)
        except SpecError as error:
            raise ValueError(str(error)) from None

    @workflow.query
    def statement(self, tool: str) -> Statement:
        return self.statements.get(tool, Statement())


@workflow.defn(name="AgentSession")
class AgentSession:
    """One agent session (see the module docstring)."""

    @workflow.init
    def __init__(self, start: SessionStart) -> None:
        self.session_id = start.session_id
        self.default_effect = effect_of(start.default_effect)
        self.config = start.settings.config()
        self.variant = mapping.Variant(start.settings.variant, start.settings.retry_every_class)
        self.calls: dict[str, _Call] = {}
        self.messages: list[MessageView] = []
        self.events: list[EventView] = []
        self._running: set[asyncio.Task[None]] = set()

    @workflow.run
    async def run(self, start: SessionStart) -> None:
        await workflow.wait_condition(lambda: False)

    # -- the model's tool calls ----------------------------------------------------------------

    @workflow.update
    def ask(self, ask: AskInput) -> str:
        """Take the call and start it; the call's key once it is in the history. Asking again
        with the same ids changes nothing."""
        key = build_key(self.session_id, ask.turn_id, ask.tool_call_id)
        if key in self.calls:
            return key
        policy, hints = policy_of(ask.statement)
        effective = resolve_policy(policy, hints, self.default_effect)
        call = _Call(key, ask, effective, workflow.now().timestamp(),
                     initial_approval(effective.requires_approval))
        self.calls[key] = call
        task = asyncio.get_running_loop().create_task(self._run(call))
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return key

    @ask.validator
    def _check_ask(self, ask: AskInput) -> None:
        try:
            build_key(self.session_id, ask.turn_id, ask.tool_call_id)
            policy_of(ask.statement)
        except SpecError as error:
            raise ValueError(str(error)) from None

    async def _run(self, call: _Call) -> None:
        if call.approval is ApprovalState.WAITING:
            state = await self._await_answer(call)
            if is_rejection(state):
                reason = (RejectReason.DEADLINE if state is ApprovalState.EXPIRED
                          else RejectReason.PERSON)
                self._record(call, rejected(reason), "")
                return
        plan = mapping.plan(call.policy, self.config, self.variant)
        retry = RetryPolicy(initial_interval=timedelta(seconds=plan.retry_interval),
                            backoff_coefficient=1.0, maximum_attempts=plan.maximum_attempts,
                            non_retryable_error_types=[mapping.TOOL_FAILED_TYPE])
        try:
            output = await workflow.execute_activity(
                mapping.ACTIVITY, ToolJob(call.key, call.ask.tool, call.ask.arguments),
                task_queue=mapping.TOOLS_QUEUE, activity_id=call.key, result_type=str,
                schedule_to_start_timeout=timedelta(seconds=plan.schedule_to_start),
                start_to_close_timeout=timedelta(seconds=plan.start_to_close),
                heartbeat_timeout=timedelta(seconds=plan.heartbeat), retry_policy=retry)
        except ActivityError as error:
            ending, text = ending_of(error)
            self._record(call, mapping.outcome(call.policy, plan, ending, text,
                                               self.config.cancel_records_failed), text)
            return
        self._record(call, mapping.succeeded(), output)

    async def _await_answer(self, call: _Call) -> ApprovalState:
        """Wait for the first answer, or the deadline, whichever lands first (D-7); the
        call's approval state then."""
        remaining = call.asked_at + self.config.approval_deadline - workflow.now().timestamp()
        if remaining > 0:
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(
                    lambda: call.approval is not ApprovalState.WAITING, timeout=remaining,
                    timeout_summary=deadline_summary(call.key))
        if call.approval is ApprovalState.WAITING:
            call.approval, _ = approval_answer(call.approval, ApprovalEvent.DEADLINE)
        return call.approval

    def _record(self, call: _Call, outcome: Outcome, output: str) -> None:
        """The call's one record: a tool result for the model and a finished event."""
        call.outcome = outcome
        ask = call.ask
        self.messages.append(MessageView(
            MessageRole.TOOL.value, turn_id=ask.turn_id, tool_call_id=ask.tool_call_id,
            tool_output=tool_result_text(outcome, output), tool_arguments=ask.arguments))
        self.events.append(EventView(self.session_id, ask.turn_id, ask.tool_call_id,
                                     ToolCallStatus.of_record(outcome.record).value,
                                     outcome.error))

    # -- people ----------------------------------------------------------------------------------

    @workflow.update
    def answer(self, given: AnswerInput) -> AnswerOutput:
        """A person's approval or rejection, answered by D-7's table."""
        call = self.calls.get(given.key)
        if call is None:
            return AnswerOutput(False, f"no call {given.key} in this session")
        state = call.approval
        if (state is ApprovalState.WAITING and workflow.now().timestamp()
                >= call.asked_at + self.config.approval_deadline):
            state, _ = approval_answer(state, ApprovalEvent.DEADLINE)
        event = ApprovalEvent.APPROVE if given.approve else ApprovalEvent.REJECT
        call.approval, reply = approval_answer(state, event)
        return AnswerOutput(reply is ApprovalReply.ACCEPTED, REPLY_TEXT[reply])

    @workflow.update
    def user_message(self, text: str) -> bool:
        """`send_user_message`: the text joins the history as a user message."""
        self.messages.append(MessageView(MessageRole.USER.value, text))
        return True

    # -- what the session shows ------------------------------------------------------------------

    @workflow.query
    def snapshot(self) -> SnapshotView:
        return SnapshotView(self.session_id, [self._view(c) for c in self.calls.values()],
                            list(self.messages))

    @workflow.query
    def events_after(self, seen: int) -> list[EventView]:
        """The session's finished events after the first `seen`."""
        return self.events[max(0, seen):]

    @staticmethod
    def _view(call: _Call) -> CallView:
        ask = call.ask
        if call.outcome is not None:
            status = ToolCallStatus.of_record(call.outcome.record)
            error = call.outcome.error
        else:
            status = (ToolCallStatus.AWAITING_APPROVAL
                      if call.approval is ApprovalState.WAITING else ToolCallStatus.RUNNING)
            error = ""
        return CallView(ask.turn_id, ask.tool_call_id, ask.tool, status.value, error, call.key)


WORKFLOWS = (AgentSession, ToolPolicies)
