"""The session workflow: one agent session (the page's Flow) running the variant's agent turn by
turn, with the update and query interface of the Temporal mapping's `AgentSession`, so its
session API (`temporal.client`) drives it unchanged.

The model's tool calls arrive as `ask` updates (asking again with the same ids changes
nothing); each call's effective policy is resolved at that moment from the statement the
client read from the policy registry (`temporal.workflows.ToolPolicies`, which the workers run
too) and kept with the call (TC-SNAP-1). A turn starts once its last call was asked `QUIET`
seconds ago (a durable timer): the turn's calls become the user prompt the scripted model
answers, and `agent.run` runs them, each call's plan in the run's deps. A run that ends with
`DeferredToolRequests` waits, on a durable timer of each call's approval deadline, for the
`answer` updates (D-7, decided by the spec's table: Pydantic AI has no deadline), then resumes
with `DeferredToolResults`: True for an approved call, a `ToolDenied` with the rejection's
text otherwise. Each call's record is read from its tool return (`mapping.record_of`) and joins
the snapshot's history and the session's AgentEvents stream; an agent run that fails records
its calls still without a record as if their attempts' worker was lost (D-5: unknown means
reached).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied
    from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow
    from pydantic_ai.exceptions import AgentRunError, UserError
    from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

    from atmostonce.engines.pydantic_ai import mapping
    from atmostonce.engines.pydantic_ai.agents import AGENTS
    from atmostonce.engines.temporal.payloads import (
        AnswerInput,
        AnswerOutput,
        AskInput,
        CallView,
        EventView,
        MessageView,
        SessionStart,
        SnapshotView,
        effect_of,
        policy_of,
    )
    from atmostonce.engines.temporal.workflows import deadline_summary
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
    from atmostonce.spec.policy import EffectivePolicy, resolve_policy
    from atmostonce.spec.records import (
        AttemptEnd,
        Outcome,
        RejectReason,
        decide,
        record_of,
        reject_text,
        unknown_detail,
    )
    from atmostonce.spec.session import MessageRole, ToolCallStatus, tool_result_text

QUIET = 0.15
"""Seconds after a turn's last call was asked before the turn runs."""
MIN_TIMER = 0.001
"""Seconds of the shortest deadline timer: a deadline already passed still starts one, so the
commands do not depend on the clock (see `_next_turn`)."""
WORKFLOW = "PydanticAgentSession"


@dataclass
class _Call:
    key: str
    ask: AskInput
    policy: EffectivePolicy
    asked_at: float
    approval: ApprovalState
    plan: mapping.CallPlan
    outcome: Outcome | None = None


@workflow.defn(name=WORKFLOW)
class PydanticSession(PydanticAIWorkflow):
    """One agent session (see the module docstring)."""

    __pydantic_ai_agents__ = tuple(AGENTS.values())

    @workflow.init
    def __init__(self, start: SessionStart) -> None:
        self.session_id = start.session_id
        self.default_effect = effect_of(start.default_effect)
        self.config = start.settings.config()
        self.variant = mapping.VARIANTS[start.settings.variant]
        self.calls: dict[str, _Call] = {}
        self.waiting: list[_Call] = []
        """Calls asked whose turn has not run yet, in the order asked."""
        self.messages: list[MessageView] = []
        self.events: list[EventView] = []
        self.history: list[ModelMessage] = []

    @workflow.run
    async def run(self, start: SessionStart) -> None:
        while True:
            await workflow.wait_condition(lambda: bool(self.waiting))
            turn = await self._next_turn()
            await self._run_turn(turn)

    async def _next_turn(self) -> list[_Call]:
        """The calls of the earliest turn waiting, once no call of it was asked for QUIET.

        Decided by the calls asked, never by comparing times: an update's `workflow.now()`
        on replay is the time its workflow task was written, which can differ from the time
        the worker first handled it by more than QUIET on a busy server, and a branch on it
        would then replay differently (a nondeterminism error that wedges the session)."""
        turn_id = self.waiting[0].ask.turn_id
        while True:
            asked = len(self.calls)
            await workflow.sleep(QUIET)
            if len(self.calls) == asked:
                break
        turn = [c for c in self.waiting if c.ask.turn_id == turn_id]
        self.waiting = [c for c in self.waiting if c.ask.turn_id != turn_id]
        return turn

    async def _run_turn(self, turn: list[_Call]) -> None:
        agent = AGENTS[self.variant.name]
        deps = mapping.TurnDeps(self.session_id, turn[0].ask.turn_id,
                                {c.ask.tool_call_id: c.plan for c in turn},
                                self.config.cancel_records_failed)
        prompt = mapping.script([(c.ask.tool_call_id, c.ask.tool, c.ask.arguments)
                                 for c in turn])
        try:
            result = await agent.run(prompt, deps=deps, message_history=self.history or None)
            self._take(turn, result.new_messages())
            while isinstance(result.output, DeferredToolRequests):
                decided = await self._decisions(turn, result.output)
                result = await agent.run(deps=deps, message_history=result.all_messages(),
                                         deferred_tool_results=decided)
                self._take(turn, result.new_messages())
            self.history = result.all_messages()
        except (ActivityError, ApplicationError, AgentRunError, UserError) as error:
            for call in turn:
                if call.outcome is None:
                    self._lost(call, f"{type(error).__name__}: {error}")

    def _take(self, turn: list[_Call], messages: list[ModelMessage]) -> None:
        """Record each of the turn's calls whose tool return `messages` hold."""
        by_id = {c.ask.tool_call_id: c for c in turn}
        for message in messages:
            if not isinstance(message, ModelRequest):
                continue
            for part in message.parts:
                call = by_id.get(getattr(part, "tool_call_id", ""))
                if call is None or call.outcome is not None:
                    continue
                if isinstance(part, ToolReturnPart):
                    text = (part.content if isinstance(part.content, str)
                            else part.model_response_str())
                    outcome = mapping.record_of(part.outcome, text)
                    self._record(call, outcome, text if part.outcome == mapping.SUCCESS else "")
                else:
                    self._record(call, mapping.record_of(mapping.FAILED, str(part)), "")

    def _lost(self, call: _Call, why: str) -> None:
        """A call the agent run ended without a tool return for: as if its attempt's worker was
        lost (D-5: unknown means reached)."""
        decision = decide(call.policy.effect, AttemptEnd.WORKER_LOST, 1, 1, False,
                          self.config.cancel_records_failed)
        self._record(call, record_of(decision, f"{unknown_detail(AttemptEnd.WORKER_LOST)}: "
                                               f"the agent run failed: {why}"), "")

    async def _decisions(self, turn: list[_Call], requests: DeferredToolRequests
                         ) -> DeferredToolResults:
        """Each deferred call's approval, once every one is answered or past its deadline."""
        by_id = {c.ask.tool_call_id: c for c in turn}
        calls = [by_id[p.tool_call_id] for p in requests.approvals]
        states = await asyncio.gather(*(self._await_answer(c) for c in calls))
        results = DeferredToolResults()
        for call, state in zip(calls, states, strict=True):
            if state is ApprovalState.APPROVED:
                results.approvals[call.ask.tool_call_id] = True
            else:
                reason = (RejectReason.DEADLINE if state is ApprovalState.EXPIRED
                          else RejectReason.PERSON)
                results.approvals[call.ask.tool_call_id] = ToolDenied(reject_text(reason))
        return results

    async def _await_answer(self, call: _Call) -> ApprovalState:
        """Wait for the first answer, or the deadline, whichever lands first (D-7)."""
        remaining = call.asked_at + self.config.approval_deadline - workflow.now().timestamp()
        if call.approval is ApprovalState.WAITING:
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(
                    lambda: call.approval is not ApprovalState.WAITING,
                    timeout=max(remaining, MIN_TIMER),
                    timeout_summary=deadline_summary(call.key))
        if call.approval is ApprovalState.WAITING:
            call.approval, _ = approval_answer(call.approval, ApprovalEvent.DEADLINE)
        return call.approval

    def _record(self, call: _Call, outcome: Outcome, output: str) -> None:
        """The call's one record: a tool result in the history and a finished event."""
        call.outcome = outcome
        ask = call.ask
        self.messages.append(MessageView(
            MessageRole.TOOL.value, turn_id=ask.turn_id, tool_call_id=ask.tool_call_id,
            tool_output=tool_result_text(outcome, output), tool_arguments=ask.arguments))
        self.events.append(EventView(self.session_id, ask.turn_id, ask.tool_call_id,
                                     ToolCallStatus.of_record(outcome.record).value,
                                     outcome.error))

    # -- the model's tool calls and people (the Temporal mapping's interface) -------------------

    @workflow.update
    def ask(self, ask: AskInput) -> str:
        """Take the call for its turn; the call's key once it is in the history. Asking again
        with the same ids changes nothing."""
        key = build_key(self.session_id, ask.turn_id, ask.tool_call_id)
        if key in self.calls:
            return key
        policy, hints = policy_of(ask.statement)
        effective = resolve_policy(policy, hints, self.default_effect)
        call = _Call(key, ask, effective, workflow.now().timestamp(),
                     initial_approval(effective.requires_approval),
                     mapping.plan(self.variant, key, ask.tool, effective, self.config))
        self.calls[key] = call
        self.waiting.append(call)
        return key

    @ask.validator
    def _check_ask(self, ask: AskInput) -> None:
        try:
            build_key(self.session_id, ask.turn_id, ask.tool_call_id)
            policy_of(ask.statement)
        except SpecError as error:
            raise ValueError(str(error)) from None

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
