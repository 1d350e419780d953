'use strict';
// What get_agent_snapshot shows: each call with the policy and deadline it kept at ask time and
// its attempt history, and the session's messages, a recorded call's tool result among them.

const spec = require('./spec');

function statusOf(call) {
  if (call.outcome) return call.outcome.record;
  return call.approval === 'waiting' ? 'awaiting_approval' : 'running';
}

function attemptView(a) {
  return {
    number: a.number, queued_at: a.queuedAt, worker: a.worker || '', handed_at: a.handedAt,
    started_at: a.startedAt, ended_at: a.endedAt, end: a.end,
    progress: a.end === null ? null : spec.progressOf(a.end),
  };
}

function callView(call) {
  return {
    turn_id: call.turnId,
    tool_call_id: call.toolCallId,
    tool: call.tool,
    status: statusOf(call),
    error: call.outcome ? call.outcome.error : '',
    idempotency_key: call.key,
    effect: call.effect,
    requires_approval: call.requiresApproval,
    approval_deadline: call.requiresApproval ? call.deadline : null,
    attempts: call.attempts.map(attemptView),
    history: true,
  };
}

function snapshot(session, sessionId) {
  if (!session) return { session_id: sessionId, tool_calls: [], messages: [] };
  return { session_id: sessionId, tool_calls: session.calls.map(callView), messages: session.messages };
}

function userMessage(text) {
  return { role: 'user', text, turn_id: '', tool_call_id: '', tool_output: '', tool_arguments: '' };
}

// The tool result the model reads for a recorded call (TC-REC-2, TC-RCN-1).
function toolMessage(call, outcome, output) {
  return {
    role: 'tool', text: '', turn_id: call.turnId, tool_call_id: call.toolCallId,
    tool_output: spec.toolResult(outcome, output), tool_arguments: call.arguments,
  };
}

module.exports = { snapshot, userMessage, toolMessage };
