'use strict';
// The page's rules as plain data and small pure functions: effect classes and the step that
// runs them, how a call's policy is resolved, what follows the end of an attempt, the approval
// answers, and the exact texts the checks compare (docs/executor-requirements.md).

class SpecError extends Error {}

const EFFECTS = ['read', 'idempotent_write', 'non_idempotent_write', 'unclassified'];

// Classes a CallTool step may run again after an infrastructure failure; the others run in
// CallSingleAttemptTool, one attempt only.
const RETRYABLE = new Set(['read', 'idempotent_write']);

// Whether a call waits for a person when its policy leaves it unset (TC-APR-2).
const APPROVAL_BY_DEFAULT = {
  read: false, idempotent_write: false, non_idempotent_write: true, unclassified: true,
};

// How cautious each class is: with hints_may_lower false, framework metadata may not pick a
// class below the session's default (D-22).
const CAUTION = { read: 0, idempotent_write: 1, non_idempotent_write: 2, unclassified: 2 };

function singleAttempt(effect) {
  return !RETRYABLE.has(effect);
}

// MCP-style hints: read-only wins, then a claim of idempotency, then a declared write.
function effectFromHints(hints) {
  if (!hints) return null;
  if (hints.read_only === true) return 'read';
  if (hints.idempotent === true) return 'idempotent_write';
  if (hints.read_only === false) return 'non_idempotent_write';
  return null;
}

// The policy a call keeps from ask time: the tool's policy, else its hints, else the session
// default, else unclassified (D-1); approval by the policy's flag, else by the class.
function resolvePolicy(policy, hints, sessionDefault, hintsMayLower) {
  let effect;
  if (policy) {
    effect = policy.effect;
  } else {
    const hinted = effectFromHints(hints);
    if (hinted !== null) {
      const floor = !hintsMayLower && sessionDefault !== null
        && CAUTION[hinted] < CAUTION[sessionDefault];
      effect = floor ? sessionDefault : hinted;
    } else {
      effect = sessionDefault !== null ? sessionDefault : 'unclassified';
    }
  }
  const flag = policy ? policy.requires_approval : null;
  const requiresApproval = flag !== null ? flag : APPROVAL_BY_DEFAULT[effect];
  return { effect, requiresApproval };
}

// Key components: non-empty, no '/', no white space or unprintable character (D-2).
function componentProblem(value) {
  if (typeof value !== 'string') return `must be a string, got ${kindOf(value)}`;
  if (value === '') return 'is empty';
  if (value.includes('/')) return "contains '/'";
  if (/[\p{C}\p{Z}]/u.test(value)) return 'contains white space or an unprintable character';
  return null;
}

function buildKey(sessionId, turnId, toolCallId) {
  const parts = { session_id: sessionId, turn_id: turnId, tool_call_id: toolCallId };
  for (const [name, value] of Object.entries(parts)) {
    const problem = componentProblem(value);
    if (problem) throw new SpecError(`${name} ${JSON.stringify(value)} ${problem}`);
  }
  return `${sessionId}/${turnId}/${toolCallId}`;
}

function kindOf(value) {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'number') return Number.isFinite(value) ? 'a number' : 'a non-finite number';
  if (typeof value === 'string') return `the string ${JSON.stringify(value).slice(0, 40)}`;
  if (typeof value === 'boolean') return `the boolean ${value}`;
  return 'an object';
}

// Texts compared exactly by the checks.
const NOT_STARTED = '(attempt progress NOT_STARTED)';
const NOT_COMPLETED = '(attempt progress NOT_COMPLETED)';
const FAILURE = {
  did_not_run: 'the tool did not run, so it is safe to call again: no attempt reached a worker '
    + NOT_STARTED,
  tool_error: 'the tool reported a failure',
  may_have_run: 'the tool may have run: an attempt reached a worker that then stopped, and no '
    + `attempts are left ${NOT_COMPLETED}`,
  may_still_be_running: `the attempt was cancelled after it reached a worker ${NOT_COMPLETED}; `
    + 'the tool may still be running, so calling it again can repeat its effect',
};
const UNKNOWN = 'outcome unknown: an attempt reached a worker and ended without a result, so '
  + 'the tool may or may not have taken effect; it will not be run again; reconcile it with its '
  + 'idempotency key';
const UNKNOWN_DETAIL = {
  worker_lost: `its worker stopped or lost its connection ${NOT_COMPLETED}`,
  cancelled: `it was cancelled or timed out, and the tool may still be running ${NOT_COMPLETED}`,
  not_reached: `an earlier attempt reached a worker ${NOT_COMPLETED}; the last one never did`,
};
const REJECTED = {
  person: 'rejected: a person rejected the call',
  deadline: 'rejected: the approval deadline passed before anyone answered',
};
const UNKNOWN_RESULT = '[outcome_unknown] the tool may or may not have taken effect';

const ENDS = ['not_reached', 'returned', 'tool_failed', 'worker_lost', 'cancelled'];
const RECORDS = ['succeeded', 'failed', 'rejected', 'outcome_unknown'];

function progressOf(end) {
  if (end === 'not_reached') return 'NOT_STARTED';
  if (end === 'worker_lost' || end === 'cancelled') return 'NOT_COMPLETED';
  return null;
}

// What follows the end of attempt `number`: null for another attempt after the backoff, or the
// call's record {record, error}. Retries are for infrastructure failures only (D-3, D-9); when
// attempts run out after a reach a read fails and any other class is outcome_unknown, unless
// the executor declares D-4's other choice for a cancelled single attempt.
function decide(effect, end, number, maxAttempts, reachedBefore, cancelRecordsFailed, output) {
  if (end === 'returned') return { record: 'succeeded', error: '' };
  if (end === 'tool_failed') {
    return { record: 'failed', error: output ? `${FAILURE.tool_error}: ${output}` : FAILURE.tool_error };
  }
  const limit = singleAttempt(effect) ? 1 : maxAttempts;
  if (!singleAttempt(effect) && number < limit) return null;
  if (!reachedBefore && end === 'not_reached') return { record: 'failed', error: FAILURE.did_not_run };
  if (effect === 'read') {
    const kind = end === 'cancelled' ? 'may_still_be_running' : 'may_have_run';
    return { record: 'failed', error: FAILURE[kind] };
  }
  if (cancelRecordsFailed && singleAttempt(effect) && end === 'cancelled') {
    return { record: 'failed', error: FAILURE.may_still_be_running };
  }
  return { record: 'outcome_unknown', error: `${UNKNOWN}: ${UNKNOWN_DETAIL[end]}` };
}

// The tool result the model reads for a recorded call (TC-REC-2, TC-RCN-1).
function toolResult(outcome, output) {
  if (outcome.record === 'succeeded') return output;
  if (outcome.record === 'outcome_unknown') return `${UNKNOWN_RESULT}: ${outcome.error}`;
  const opening = `${outcome.record}: `;
  return outcome.error.startsWith(opening) ? outcome.error : opening + outcome.error;
}

// D-7: a person's answer, or the deadline, lands only on a waiting call.
const REPLY_TEXT = {
  accepted: 'accepted',
  approved: 'the call was already approved; the answer changes nothing',
  rejected: 'the call was already rejected; it will never run',
  expired: 'the approval deadline already passed; the call is recorded as rejected',
  not_required: 'the call does not wait for approval; there is nothing to answer',
};
const APPROVAL_STATES = ['not_required', 'waiting', 'approved', 'rejected', 'expired'];

module.exports = {
  SpecError, EFFECTS, RETRYABLE, ENDS, RECORDS, APPROVAL_STATES, REJECTED, REPLY_TEXT,
  singleAttempt, resolvePolicy, componentProblem, buildKey, kindOf, progressOf, decide,
  toolResult,
};
