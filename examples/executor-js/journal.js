'use strict';
// The journal: one JSON object per durable fact, written in a Persist before any command that
// depends on it, and read back strictly by `replay` on a restart (D-8). A field of the wrong
// JSON kind, a missing field, an unknown name, an attempt id that is not `{key}#{n}` of the
// entry's own key, or an entry about a call or attempt no earlier entry made is refused with
// one line naming the entry's index and the field.
//
// The entries about attempts carry the call's key beside the attempt id, and share the field
// names `type`, `at`, `key`, `attempt`, `worker`, `tool`, `state` and `end` with the reference
// executor's: the runtime's chaos run reads a server's journal by those names to learn which
// hand-outs were durable, including those whose go-ahead never left a dying server.

const spec = require('./spec');
const views = require('./views');

const { SpecError } = spec;

// -- writing --------------------------------------------------------------------------------

function policyEntry(at, tool, policy, hints) {
  return {
    type: 'policy', at, tool,
    effect: policy ? policy.effect : null,
    requires_approval: policy ? policy.requires_approval : null,
    approval_deadline: policy ? policy.approval_deadline : null,
    read_only: hints ? hints.read_only : null,
    idempotent: hints ? hints.idempotent : null,
    destructive: hints ? hints.destructive : null,
  };
}

function sessionEntry(at, sessionId, defaultEffect, hintsMayLower) {
  return {
    type: 'session', at, session_id: sessionId, default_effect: defaultEffect,
    hints_may_lower: hintsMayLower,
  };
}

function askEntry(at, call) {
  return {
    type: 'ask', at, key: call.key, tool: call.tool, arguments: call.arguments,
    effect: call.effect, requires_approval: call.requiresApproval,
    approval_deadline: call.deadline,
  };
}

const approvalEntry = (at, key, state) => ({ type: 'approval', at, key, state });
const queuedEntry = (at, attempt) => ({
  type: 'queued', at, key: attempt.call.key, attempt: attempt.id,
});
const handedEntry = (at, attempt) => ({
  type: 'handed', at, key: attempt.call.key, attempt: attempt.id, worker: attempt.worker,
});
const endedEntry = (at, attempt, end, mayStillRun, output) => ({
  type: 'ended', at, key: attempt.call.key, attempt: attempt.id, end, may_still_run: mayStillRun,
  output,
});
const recordEntry = (at, key, outcome, output) => ({
  type: 'record', at, key, record: outcome.record, error: outcome.error, output,
});
const userMessageEntry = (at, sessionId, text) => ({
  type: 'user_message', at, session_id: sessionId, text,
});
const runOverEntry = (at, attempt, worker) => ({ type: 'run_over', at, attempt, worker });
const workerLostEntry = (at, worker) => ({ type: 'worker_lost', at, worker });

// -- reading --------------------------------------------------------------------------------

const ENUM = (names) => (v) => typeof v === 'string' && names.includes(v);
const KINDS = {
  number: [(v) => typeof v === 'number' && Number.isFinite(v), 'a finite number'],
  string: [(v) => typeof v === 'string', 'a string'],
  id: [(v) => typeof v === 'string' && v !== '', 'a non-empty string'],
  bool: [(v) => typeof v === 'boolean', 'true or false'],
  bool_or_null: [(v) => v === null || typeof v === 'boolean', 'true, false or null'],
  deadline_or_null: [(v) => v === null || (typeof v === 'number' && Number.isFinite(v) && v >= 0),
    'a finite number >= 0 or null'],
  deadline: [(v) => typeof v === 'number' && Number.isFinite(v) && v >= 0, 'a finite number >= 0'],
  effect: [ENUM(spec.EFFECTS), `one of ${spec.EFFECTS.join(', ')}`],
  effect_or_null: [(v) => v === null || spec.EFFECTS.includes(v),
    `null or one of ${spec.EFFECTS.join(', ')}`],
  answered: [ENUM(['approved', 'rejected', 'expired']), 'one of approved, rejected, expired'],
  end: [ENUM(spec.ENDS), `one of ${spec.ENDS.join(', ')}`],
  record: [ENUM(spec.RECORDS), `one of ${spec.RECORDS.join(', ')}`],
};

const SHAPES = {
  policy: {
    at: 'number', tool: 'string', effect: 'effect_or_null', requires_approval: 'bool_or_null',
    approval_deadline: 'deadline_or_null', read_only: 'bool_or_null', idempotent: 'bool_or_null',
    destructive: 'bool_or_null',
  },
  session: { at: 'number', session_id: 'id', default_effect: 'effect_or_null', hints_may_lower: 'bool' },
  ask: {
    at: 'number', key: 'id', tool: 'string', arguments: 'string', effect: 'effect',
    requires_approval: 'bool', approval_deadline: 'deadline',
  },
  approval: { at: 'number', key: 'id', state: 'answered' },
  queued: { at: 'number', key: 'id', attempt: 'id' },
  handed: { at: 'number', key: 'id', attempt: 'id', worker: 'id' },
  ended: {
    at: 'number', key: 'id', attempt: 'id', end: 'end', may_still_run: 'bool', output: 'string',
  },
  record: { at: 'number', key: 'id', record: 'record', error: 'string', output: 'string' },
  user_message: { at: 'number', session_id: 'id', text: 'string' },
  run_over: { at: 'number', attempt: 'id', worker: 'id' },
  worker_lost: { at: 'number', worker: 'id' },
};

// The entry, checked against its shape; SpecError naming the index and the field otherwise.
function checked(index, entry) {
  const fail = (problem) => { throw new SpecError(`journal entry ${index}: ${problem}`); };
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    fail(`must be an object, got ${spec.kindOf(entry)}`);
  }
  const types = Object.keys(SHAPES);
  if (!('type' in entry)) fail("field 'type' is missing");
  if (typeof entry.type !== 'string' || !Object.hasOwn(SHAPES, entry.type)) {
    fail(`field 'type' must be one of ${types.join(', ')}, got ${spec.kindOf(entry.type)}`);
  }
  const shape = SHAPES[entry.type];
  for (const [field, kind] of Object.entries(shape)) {
    if (!Object.hasOwn(entry, field)) fail(`field '${field}' is missing`);
    const [test, what] = KINDS[kind];
    if (!test(entry[field])) fail(`field '${field}' must be ${what}, got ${spec.kindOf(entry[field])}`);
  }
  for (const field of Object.keys(entry)) {
    if (field !== 'type' && !Object.hasOwn(shape, field)) fail(`unknown field '${field}'`);
  }
  return entry;
}

// Fold every entry into the fresh executor `ex`, in order. The fold restores what happened and
// decides nothing new: what a restart does next is `Executor.resume`'s job.
function replay(ex, entries) {
  if (!Array.isArray(entries)) throw new SpecError('the journal must be a list of entries');
  entries.forEach((raw, index) => {
    const fail = (problem) => { throw new SpecError(`journal entry ${index}: ${problem}`); };
    const e = checked(index, raw);
    const callOf = (key, field) => {
      const call = ex.calls.get(key);
      if (!call) fail(`field '${field}': no call with key ${JSON.stringify(key)} was asked`);
      return call;
    };
    const ownAttempt = () => {
      if (!e.attempt.startsWith(`${e.key}#`)) {
        fail(`field 'attempt': ${JSON.stringify(e.attempt)} is not an attempt of the call `
          + `${JSON.stringify(e.key)} the entry names`);
      }
      callOf(e.key, 'key');
    };
    const liveAttempt = (id) => {
      ownAttempt();
      const attempt = ex.live.get(id);
      if (!attempt) fail(`field 'attempt': ${JSON.stringify(id)} was never queued or has already ended`);
      return attempt;
    };
    switch (e.type) {
      case 'policy': {
        const policy = e.effect === null ? null : {
          effect: e.effect, requires_approval: e.requires_approval,
          approval_deadline: e.approval_deadline,
        };
        if (e.effect === null && (e.requires_approval !== null || e.approval_deadline !== null)) {
          fail("field 'effect' is null, but the policy sets an approval rule or deadline");
        }
        const hints = { read_only: e.read_only, idempotent: e.idempotent, destructive: e.destructive };
        ex.policies.set(e.tool, { policy, hints });
        break;
      }
      case 'session': {
        const problem = spec.componentProblem(e.session_id);
        if (problem) fail(`field 'session_id' ${problem}`);
        const session = ex.sessions.get(e.session_id);
        if (session) {
          session.defaultEffect = e.default_effect;
          session.hintsMayLower = e.hints_may_lower;
        } else {
          ex.sessions.set(e.session_id, {
            id: e.session_id, defaultEffect: e.default_effect, hintsMayLower: e.hints_may_lower,
            calls: [], messages: [],
          });
        }
        break;
      }
      case 'ask': {
        const parts = e.key.split('/');
        if (parts.length !== 3 || parts.some((p) => spec.componentProblem(p) !== null)) {
          fail(`field 'key' ${JSON.stringify(e.key)} is not session/turn/call`);
        }
        if (ex.calls.has(e.key)) fail(`field 'key': a second ask for ${JSON.stringify(e.key)}`);
        const session = ex.sessions.get(parts[0]);
        if (!session) fail(`field 'key': session ${JSON.stringify(parts[0])} was never opened`);
        ex.newCall(e.key, session, parts[1], parts[2], e.tool, e.arguments, e.effect,
          e.requires_approval, e.approval_deadline, e.at);
        break;
      }
      case 'approval': {
        const call = callOf(e.key, 'key');
        if (call.approval !== 'waiting') {
          fail(`field 'key': the call ${JSON.stringify(e.key)} was not waiting for approval`);
        }
        call.approval = e.state;
        break;
      }
      case 'queued': {
        ownAttempt();
        const call = callOf(e.key, 'key');
        const current = call.attempts[call.attempts.length - 1];
        if (e.attempt !== `${call.key}#${call.attempts.length + 1}`) {
          fail(`field 'attempt': ${JSON.stringify(e.attempt)} is not the next attempt of its call`);
        }
        if (current && current.phase !== 'ended') {
          fail(`field 'attempt': queued while attempt ${current.number} has not ended`);
        }
        if (call.outcome !== null || call.pending !== null) {
          fail(`field 'attempt': queued after its call was decided`);
        }
        ex.newAttempt(call, e.at);
        break;
      }
      case 'handed': {
        const attempt = liveAttempt(e.attempt);
        if (attempt.phase !== 'queued') fail(`field 'attempt': ${e.attempt} was already handed out`);
        ex.queue.delete(attempt.id);
        attempt.phase = 'handed';
        attempt.worker = e.worker;
        attempt.handedAt = e.at;
        break;
      }
      case 'ended': {
        const attempt = liveAttempt(e.attempt);
        const queued = attempt.phase === 'queued';
        if (queued !== (e.end === 'not_reached')) {
          fail(`field 'end': attempt ${e.attempt} cannot end ${e.end}: it `
            + `${queued ? 'was never handed out' : 'was handed out'}`);
        }
        if (e.may_still_run && queued) fail(`field 'may_still_run': attempt ${e.attempt} never ran`);
        ex.closeAttempt(attempt, e.end, e.at);
        if (e.may_still_run) ex.abandoned.set(attempt.id, { worker: attempt.worker, tool: attempt.call.tool });
        const call = attempt.call;
        const outcome = ex.afterEnd(call, attempt, e.end, e.output);
        if (outcome !== null && call.outcome === null) {
          call.pending = outcome;
          call.pendingOutput = e.output;
        }
        break;
      }
      case 'record': {
        const call = callOf(e.key, 'key');
        if (call.outcome !== null) fail(`field 'key': the call ${JSON.stringify(e.key)} already has a record`);
        call.outcome = { record: e.record, error: e.error };
        call.output = e.output;
        call.pending = null;
        call.session.messages.push(views.toolMessage(call, call.outcome, e.output));
        break;
      }
      case 'user_message': {
        const session = ex.sessions.get(e.session_id);
        if (!session) fail(`field 'session_id': session ${JSON.stringify(e.session_id)} was never opened`);
        session.messages.push(views.userMessage(e.text));
        break;
      }
      case 'run_over': {
        const cut = e.attempt.lastIndexOf('#');
        const call = callOf(cut < 0 ? e.attempt : e.attempt.slice(0, cut), 'attempt');
        if (!call.attempts.some((a) => a.id === e.attempt)) {
          fail(`field 'attempt': ${JSON.stringify(e.attempt)} was never queued`);
        }
        const run = ex.abandoned.get(e.attempt);
        if (run && run.worker === e.worker) ex.abandoned.delete(e.attempt);
        break;
      }
      case 'worker_lost': {
        for (const [id, run] of [...ex.abandoned.entries()]) {
          if (run.worker === e.worker) ex.abandoned.delete(id);
        }
        break;
      }
    }
  });
}

module.exports = {
  policyEntry, sessionEntry, askEntry, approvalEntry, queuedEntry, handedEntry, endedEntry,
  recordEntry, userMessageEntry, runOverEntry, workerLostEntry, replay,
};
