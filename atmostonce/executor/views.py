"""What the session API shows: the snapshot's tool calls, and the tool result message a record
adds to the history (TC-REC-2, TC-RCN-FIND)."""

from __future__ import annotations

from collections.abc import Mapping

from atmostonce.executor.state import Call, ExecutorState
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.records import Outcome, Record
from atmostonce.spec.session import (
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallStatus,
    ToolCallView,
    tool_result_text,
)

# Enum members read on every record and snapshot, as module names: reading a member from its
# class takes a slow attribute lookup each time in CPython 3.11.
_TOOL = MessageRole.TOOL
_WAITING = ApprovalState.WAITING
_AWAITING_APPROVAL = ToolCallStatus.AWAITING_APPROVAL
_RUNNING = ToolCallStatus.RUNNING


def tool_message(call: Call, outcome: Outcome, output: str) -> Message:
    """The tool result the model reads for a recorded call; every record reaches the model, an
    unknown outcome says so (TC-REC-2, TC-RCN-1, TC-RCN-FIND)."""
    return Message(_TOOL, turn_id=call.turn_id, tool_call_id=call.tool_call_id,
                   tool_output=tool_result_text(outcome, output), tool_arguments=call.arguments)


# TC-RCN-FIND: the status a record shows, by the record's value (a string's hash is cached; an
# enum member's is computed in Python).
STATUS_OF_RECORD: Mapping[str, ToolCallStatus] = {r._value_: ToolCallStatus.of_record(r)
                                                  for r in Record}


def status_of(call: Call) -> ToolCallStatus:
    """Awaiting approval, running (queued, out at a worker or between attempts), or the record."""
    if call.outcome is not None:
        return STATUS_OF_RECORD[call.outcome.record._value_]
    if call.approval is _WAITING:
        return _AWAITING_APPROVAL
    return _RUNNING


def call_view(call: Call) -> ToolCallView:
    """One call as `get_agent_snapshot` lists it: an unknown outcome shows its status and error
    and the key to reconcile it with (TC-RCN-FIND, TC-RCN-KEY)."""
    error = call.outcome.error if call.outcome is not None else ""
    return ToolCallView(call.turn_id, call.tool_call_id, call.tool, status_of(call), error,
                        call.key)


def snapshot(state: ExecutorState, session_id: str) -> AgentSnapshot:
    """The session's calls in ask order and its messages in order; empty for an unknown one."""
    session = state.sessions.get(session_id)
    if session is None:
        return AgentSnapshot(session_id, (), ())
    return AgentSnapshot(session_id, tuple([call_view(c) for c in session.calls]),
                         tuple(session.messages))
