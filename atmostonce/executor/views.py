"""What the session API shows: the snapshot's tool calls with the policy and approval deadline
each kept and its attempt history, and the tool result message a record adds to the history
(TC-REC-2, TC-RCN-FIND, TC-SNAP-1, D-30, D-32)."""

from __future__ import annotations

from atmostonce.executor.members import AWAITING_APPROVAL, RUNNING, STATUS_OF_RECORD, TOOL, WAITING
from atmostonce.executor.state import Attempt, Call, ExecutorState
from atmostonce.spec.records import AttemptProgress, Outcome
from atmostonce.spec.session import (
    AgentSnapshot,
    AttemptView,
    Message,
    ToolCallStatus,
    ToolCallView,
    tool_result_text,
)


def tool_message(call: Call, outcome: Outcome, output: str) -> Message:
    """The tool result the model reads for a recorded call; every record reaches the model, an
    unknown outcome says so (TC-REC-2, TC-RCN-1, TC-RCN-FIND)."""
    return Message(TOOL, turn_id=call.turn_id, tool_call_id=call.tool_call_id,
                   tool_output=tool_result_text(outcome, output), tool_arguments=call.arguments)


def status_of(call: Call) -> ToolCallStatus:
    """Awaiting approval, running (queued, out at a worker or between attempts), or the record."""
    if call.outcome is not None:
        return STATUS_OF_RECORD[call.outcome.record._value_]
    if call.approval is WAITING:
        return AWAITING_APPROVAL
    return RUNNING


def attempt_view(attempt: Attempt) -> AttemptView:
    """One attempt as the Flow's history shows it (D-30)."""
    end = attempt.end
    return AttemptView(attempt.number, attempt.queued_at, attempt.worker or "",
                       attempt.handed_at, attempt.started_at, attempt.ended_at, end,
                       None if end is None else AttemptProgress.of_end(end))


def call_view(call: Call, deadline: float) -> ToolCallView:
    """One call as `get_agent_snapshot` lists it: an unknown outcome shows its status and error
    and the key to reconcile it with (TC-RCN-FIND, TC-RCN-KEY); every call shows the effect
    class and approval rule it kept at ask time (TC-SNAP-1), its approval `deadline` when it
    needs approval (D-32), and its attempts (D-30)."""
    error = call.outcome.error if call.outcome is not None else ""
    policy = call.policy
    return ToolCallView(call.turn_id, call.tool_call_id, call.tool, status_of(call), error,
                        call.key, policy.effect, policy.requires_approval,
                        deadline if policy.requires_approval else None,
                        tuple([attempt_view(a) for a in call.history]), True)


def snapshot(state: ExecutorState, session_id: str, setting: float) -> AgentSnapshot:
    """The session's calls in ask order and its messages in order; empty for an unknown one.
    `setting` is the executor's approval deadline, for calls from a journal that kept none."""
    session = state.sessions.get(session_id)
    if session is None:
        return AgentSnapshot(session_id, (), ())
    views = [call_view(c, setting if c.approval_deadline is None else c.approval_deadline)
             for c in session.calls]
    return AgentSnapshot(session_id, tuple(views), tuple(session.messages))
