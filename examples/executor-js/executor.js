'use strict';
// The executor: events in, commands out, no clock or IO of its own. One object per instance the
// harness opens; `recover` rebuilds one from the entries it persisted (journal.js).

const spec = require('./spec');
const journal = require('./journal');
const views = require('./views');

const { SpecError } = spec;

// Timer ids are `{kind}:{subject}`, so a fired id says what it is about.
const timerId = (kind, subject) => `${kind}:${subject}`;

function checkConfig(config) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new SpecError('config must be an object');
  }
  const out = {
    max_attempts: 3, retry_backoff: 0.5, queue_timeout: 30.0, run_timeout: 60.0,
    heartbeat_timeout: 10.0, lease: 5.0, approval_deadline: 300.0, fence: false,
    cancel_records_failed: false,
  };
  for (const [name, value] of Object.entries(config)) {
    if (!(name in out)) throw new SpecError(`unknown option ${name}`);
    out[name] = value;
  }
  const attempts = out.max_attempts;
  if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1) {
    throw new SpecError(`max_attempts must be a whole number >= 1, got ${spec.kindOf(attempts)}`);
  }
  for (const name of ['retry_backoff', 'queue_timeout', 'run_timeout', 'heartbeat_timeout',
    'lease', 'approval_deadline']) {
    const value = out[name];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new SpecError(`${name} must be a finite number of seconds >= 0, got ${spec.kindOf(value)}`);
    }
  }
  for (const name of ['fence', 'cancel_records_failed']) {
    if (typeof out[name] !== 'boolean') {
      throw new SpecError(`${name} must be true or false, got ${spec.kindOf(out[name])}`);
    }
  }
  if (out.lease >= out.heartbeat_timeout) {
    throw new SpecError(`lease (${out.lease}) must be shorter than heartbeat_timeout `
      + `(${out.heartbeat_timeout}): a cut-off worker must stop before it is declared lost`);
  }
  return out;
}

class Executor {
  constructor(config) {
    this.config = checkConfig(config);
    this.policies = new Map(); // tool -> {policy, hints}
    this.sessions = new Map(); // id -> {id, defaultEffect, hintsMayLower, calls, messages}
    this.calls = new Map(); // key -> call
    this.live = new Map(); // attempt id -> attempt not ended
    this.queue = new Map(); // attempt id -> queued attempt, oldest first
    this.workers = new Map(); // name -> {name, holding}
    this.abandoned = new Map(); // attempt id -> {worker, tool}: runs given up on that may go on
  }

  // -- events ------------------------------------------------------------------------------

  handle(event) {
    const out = [];
    switch (event.type) {
      case 'SetPolicy': this.setPolicy(event, out); break;
      case 'OpenSession': this.openSession(event.session_id, event.default_effect,
        event.hints_may_lower, event.at, out); break;
      case 'Ask': this.ask(event, out); break;
      case 'Answer': this.answer(event, out); break;
      case 'UserMessage': this.userMessage(event, out); break;
      case 'Connected': this.connected(event, out); break;
      case 'Poll': this.poll(event, out); break;
      case 'Started': this.started(event, out); break;
      case 'Heartbeat': this.touch(event.worker, out); break;
      case 'Finished': this.finished(event, out); break;
      case 'TimerFired': this.timerFired(event, out); break;
      default: throw new SpecError(`unknown event type ${event.type}`);
    }
    return out;
  }

  setPolicy(event, out) {
    this.policies.set(event.tool, { policy: event.policy, hints: event.hints });
    out.push(persist(journal.policyEntry(event.at, event.tool, event.policy, event.hints)));
  }

  openSession(id, defaultEffect, hintsMayLower, at, out) {
    let session = this.sessions.get(id);
    if (!session) {
      session = { id, defaultEffect, hintsMayLower, calls: [], messages: [] };
      this.sessions.set(id, session);
    } else {
      session.defaultEffect = defaultEffect;
      session.hintsMayLower = hintsMayLower;
    }
    out.push(persist(journal.sessionEntry(at, id, defaultEffect, hintsMayLower)));
    return session;
  }

  ask(event, out) {
    const key = spec.buildKey(event.session_id, event.turn_id, event.tool_call_id);
    if (this.calls.has(key)) return;
    const session = this.sessions.get(event.session_id)
      || this.openSession(event.session_id, null, true, event.at, out);
    const registered = this.policies.get(event.tool);
    const { effect, requiresApproval } = spec.resolvePolicy(
      registered ? registered.policy : null, registered ? registered.hints : null,
      session.defaultEffect, session.hintsMayLower);
    let deadline = event.approval_deadline;
    if (deadline === null && registered && registered.policy) {
      deadline = registered.policy.approval_deadline;
    }
    if (deadline === null) deadline = this.config.approval_deadline;
    const call = this.newCall(key, session, event.turn_id, event.tool_call_id, event.tool,
      event.arguments, effect, requiresApproval, deadline, event.at);
    out.push(persist(journal.askEntry(event.at, call)));
    if (call.approval === 'waiting') {
      out.push(startTimer('approval_deadline', key, deadline, key));
    } else {
      this.queueAttempt(call, event.at, out);
    }
  }

  newCall(key, session, turnId, toolCallId, tool, args, effect, requiresApproval, deadline, at) {
    const call = {
      key, session, turnId, toolCallId, tool, arguments: args, effect, requiresApproval,
      deadline, askedAt: at, approval: requiresApproval ? 'waiting' : 'not_required',
      attempts: [], reached: false, backoff: false, pending: null, outcome: null, output: '',
    };
    this.calls.set(key, call);
    session.calls.push(call);
    return call;
  }

  answer(event, out) {
    const call = this.calls.get(event.key);
    if (!call) {
      out.push(reply(event.request, false,
        `no tool call has the idempotency key ${JSON.stringify(event.key)}`));
      return;
    }
    // The deadline is read off the clock, not off its timer: a timer that is late (a stalled
    // loop, one started again by a restart) must not let an answer past it decide.
    if (call.approval === 'waiting' && event.at >= call.askedAt + call.deadline) {
      this.approvalDeadline(call.key, event.at, out);
      out.push({ type: 'StopTimer', timer: timerId('approval_deadline', call.key) });
    }
    if (call.approval !== 'waiting') {
      out.push(reply(event.request, false, spec.REPLY_TEXT[call.approval]));
      return;
    }
    call.approval = event.approve ? 'approved' : 'rejected';
    out.push(persist(journal.approvalEntry(event.at, call.key, call.approval)));
    out.push({ type: 'StopTimer', timer: timerId('approval_deadline', call.key) });
    if (event.approve) {
      this.queueAttempt(call, event.at, out);
    } else {
      this.finalize(call, { record: 'rejected', error: spec.REJECTED.person }, '', event.at, out);
    }
    out.push(reply(event.request, true, spec.REPLY_TEXT.accepted));
  }

  approvalDeadline(key, at, out) {
    const call = this.calls.get(key);
    if (!call || call.approval !== 'waiting') return;
    call.approval = 'expired';
    out.push(persist(journal.approvalEntry(at, key, 'expired')));
    this.finalize(call, { record: 'rejected', error: spec.REJECTED.deadline }, '', at, out);
  }

  userMessage(event, out) {
    const session = this.sessions.get(event.session_id);
    if (!session) {
      out.push(reply(event.request, false, `no session ${JSON.stringify(event.session_id)}`));
      return;
    }
    session.messages.push(views.userMessage(event.text));
    out.push(persist(journal.userMessageEntry(event.at, event.session_id, event.text)));
    out.push(reply(event.request, true, ''));
  }

  // -- attempts ----------------------------------------------------------------------------

  newAttempt(call, at) {
    const number = call.attempts.length + 1;
    const attempt = {
      id: `${call.key}#${number}`, call, number, phase: 'queued', worker: null, end: null,
      queuedAt: at, handedAt: null, startedAt: null, endedAt: null,
    };
    call.attempts.push(attempt);
    call.backoff = false;
    this.live.set(attempt.id, attempt);
    this.queue.set(attempt.id, attempt);
    return attempt;
  }

  queueAttempt(call, at, out) {
    const attempt = this.newAttempt(call, at);
    out.push(persist(journal.queuedEntry(at, attempt)));
    out.push(startTimer('queue_timeout', attempt.id, this.config.queue_timeout, call.key));
  }

  // D-6: with the fence on, a single-attempt call waits while a run of its tool that the
  // executor gave up on may still be going.
  fenced(attempt) {
    if (!this.config.fence || !spec.singleAttempt(attempt.call.effect)) return false;
    for (const run of this.abandoned.values()) {
      if (run.tool === attempt.call.tool) return true;
    }
    return false;
  }

  // D-5: the hand-out is durable before the go-ahead; the run timeout starts with it, since the
  // tool may start before `Started` arrives.
  handOut(worker, attempt, at, out) {
    this.queue.delete(attempt.id);
    attempt.phase = 'handed';
    attempt.worker = worker.name;
    attempt.handedAt = at;
    worker.holding = attempt;
    const call = attempt.call;
    out.push({ type: 'StopTimer', timer: timerId('queue_timeout', attempt.id) });
    out.push(persist(journal.handedEntry(at, attempt)));
    out.push({
      type: 'GoAhead', worker: worker.name, attempt: attempt.id, key: call.key, tool: call.tool,
      arguments: call.arguments, lease: this.config.lease,
    });
    out.push(startTimer('run_timeout', attempt.id, this.config.run_timeout, call.key));
  }

  // The attempt ended: durably, then another attempt after the backoff or the call's record.
  // `mayGoOn` remembers a run that may still be going at its worker (TC-AMO-3).
  endAttempt(attempt, end, at, out, output = '', mayGoOn = false) {
    const wasOut = attempt.phase !== 'queued';
    this.closeAttempt(attempt, end, at);
    if (wasOut && end !== 'cancelled') {
      out.push({ type: 'StopTimer', timer: timerId('run_timeout', attempt.id) });
    }
    if (mayGoOn) this.abandoned.set(attempt.id, { worker: attempt.worker, tool: attempt.call.tool });
    out.push(persist(journal.endedEntry(at, attempt, end, mayGoOn, output)));
    const call = attempt.call;
    const outcome = this.afterEnd(call, attempt, end, output);
    if (outcome === null) {
      out.push(startTimer('retry_backoff', call.key, this.config.retry_backoff, call.key));
    } else {
      this.finalize(call, outcome, output, at, out);
    }
  }

  closeAttempt(attempt, end, at) {
    attempt.phase = 'ended';
    attempt.end = end;
    attempt.endedAt = at;
    this.live.delete(attempt.id);
    this.queue.delete(attempt.id);
    const holder = attempt.worker !== null ? this.workers.get(attempt.worker) : undefined;
    if (holder && holder.holding === attempt) holder.holding = null;
  }

  afterEnd(call, attempt, end, output) {
    const outcome = spec.decide(call.effect, end, attempt.number, this.config.max_attempts,
      call.reached, this.config.cancel_records_failed, output);
    call.reached = call.reached || end !== 'not_reached';
    if (outcome === null) call.backoff = true;
    return outcome;
  }

  // The call's one record: persisted, published, and told to the model (TC-REC-1, TC-REC-2).
  finalize(call, outcome, output, at, out) {
    if (call.outcome !== null) return;
    call.outcome = outcome;
    call.output = output;
    call.pending = null;
    out.push(persist(journal.recordEntry(at, call.key, outcome, output)));
    out.push({
      type: 'Publish',
      event: {
        session_id: call.session.id, turn_id: call.turnId, tool_call_id: call.toolCallId,
        status: outcome.record, error: outcome.error, kind: 'tool_call_finished',
      },
    });
    call.session.messages.push(views.toolMessage(call, outcome, output));
  }

  // -- workers -----------------------------------------------------------------------------

  // Every message from a worker restarts its heartbeat timeout (D-12).
  touch(name, out) {
    let worker = this.workers.get(name);
    if (!worker) {
      worker = { name, holding: null };
      this.workers.set(name, worker);
    }
    out.push(startTimer('heartbeat_timeout', name, this.config.heartbeat_timeout, ''));
    return worker;
  }

  connected(event, out) {
    const worker = this.touch(event.worker, out);
    const held = worker.holding;
    if (held) {
      const going = event.running.includes(held.id);
      this.endAttempt(held, 'worker_lost', event.at, out, '',
        going && spec.singleAttempt(held.call.effect));
    }
    const over = [...this.abandoned.entries()]
      .filter(([id, run]) => run.worker === event.worker && !event.running.includes(id))
      .map(([id]) => id).sort();
    for (const id of over) {
      this.abandoned.delete(id);
      out.push(persist(journal.runOverEntry(event.at, id, event.worker)));
    }
  }

  poll(event, out) {
    const worker = this.touch(event.worker, out);
    let next = null;
    if (!worker.holding) {
      for (const attempt of this.queue.values()) {
        if (!this.fenced(attempt)) { next = attempt; break; }
      }
    }
    if (next) this.handOut(worker, next, event.at, out);
    else out.push({ type: 'NoWork', worker: event.worker });
  }

  started(event, out) {
    this.touch(event.worker, out);
    const attempt = this.live.get(event.attempt);
    if (attempt && attempt.phase === 'handed' && attempt.worker === event.worker) {
      attempt.phase = 'started';
      attempt.startedAt = event.at;
      out.push(startTimer('run_timeout', attempt.id, this.config.run_timeout, attempt.call.key));
    }
  }

  finished(event, out) {
    this.touch(event.worker, out);
    const attempt = this.live.get(event.attempt);
    if (attempt && attempt.phase !== 'queued' && attempt.worker === event.worker) {
      this.endAttempt(attempt, event.ok ? 'returned' : 'tool_failed', event.at, out, event.output);
      return;
    }
    const run = this.abandoned.get(event.attempt);
    if (run && run.worker === event.worker) {
      this.abandoned.delete(event.attempt);
      out.push(persist(journal.runOverEntry(event.at, event.attempt, event.worker)));
    }
  }

  // -- timers ------------------------------------------------------------------------------

  timerFired(event, out) {
    const sep = event.timer.indexOf(':');
    if (sep < 0) return;
    const kind = event.timer.slice(0, sep);
    const subject = event.timer.slice(sep + 1);
    const at = event.at;
    if (kind === 'approval_deadline') this.approvalDeadline(subject, at, out);
    else if (kind === 'queue_timeout') this.queueTimeout(subject, at, out);
    else if (kind === 'run_timeout') this.runTimeout(subject, at, out);
    else if (kind === 'heartbeat_timeout') this.workerLost(subject, at, out);
    else if (kind === 'retry_backoff') this.retryBackoff(subject, at, out);
  }

  // No worker took the attempt in time: it never reached one (TC-REC-NOTRUN).
  queueTimeout(id, at, out) {
    const attempt = this.live.get(id);
    if (attempt && attempt.phase === 'queued') this.endAttempt(attempt, 'not_reached', at, out);
  }

  // Cancel is cooperative: the run may go on, and for a single-attempt call it is remembered.
  runTimeout(id, at, out) {
    const attempt = this.live.get(id);
    if (!attempt || attempt.phase === 'queued' || attempt.worker === null) return;
    out.push({ type: 'Cancel', worker: attempt.worker, attempt: attempt.id });
    this.endAttempt(attempt, 'cancelled', at, out, '', spec.singleAttempt(attempt.call.effect));
  }

  retryBackoff(key, at, out) {
    const call = this.calls.get(key);
    if (call && call.backoff && call.outcome === null) this.queueAttempt(call, at, out);
  }

  // A worker silent for the heartbeat timeout is lost with its attempt; its lease ran out
  // first, so the runs it had are over (D-12).
  workerLost(name, at, out) {
    const worker = this.workers.get(name);
    const runs = [...this.abandoned.entries()].filter(([, run]) => run.worker === name);
    if (!worker && runs.length === 0) return;
    if (worker) {
      if (worker.holding) this.endAttempt(worker.holding, 'worker_lost', at, out);
      this.workers.delete(name);
    }
    if (runs.length) {
      for (const [id] of runs) this.abandoned.delete(id);
      out.push(persist(journal.workerLostEntry(at, name)));
    }
    out.push({ type: 'DropWorker', worker: name });
  }

  // -- restart (D-8) -----------------------------------------------------------------------

  recover(entries, at) {
    if (this.sessions.size || this.calls.size || this.policies.size || this.workers.size) {
      throw new SpecError('recover needs a fresh executor');
    }
    journal.replay(this, entries);
    const out = [];
    for (const call of this.calls.values()) this.resume(call, at, out);
    const workers = new Set([...this.abandoned.values()].map((run) => run.worker));
    for (const name of workers) {
      out.push(startTimer('heartbeat_timeout', name, this.config.heartbeat_timeout, ''));
    }
    return out;
  }

  // Pick a call up where its journal left it: an attempt out at a worker is lost to it, a
  // queued one stays queued, a waiting approval keeps the deadline counted from the ask.
  resume(call, at, out) {
    const current = call.attempts[call.attempts.length - 1];
    if (current && current.phase !== 'ended') {
      if (current.phase === 'queued') {
        out.push(startTimer('queue_timeout', current.id, this.config.queue_timeout, call.key));
      } else {
        this.endAttempt(current, 'worker_lost', at, out, '', spec.singleAttempt(call.effect));
      }
      return;
    }
    if (call.outcome !== null) return;
    if (call.pending !== null) {
      this.finalize(call, call.pending, call.pendingOutput, at, out);
    } else if (call.approval === 'rejected') {
      this.finalize(call, { record: 'rejected', error: spec.REJECTED.person }, '', at, out);
    } else if (call.approval === 'expired') {
      this.finalize(call, { record: 'rejected', error: spec.REJECTED.deadline }, '', at, out);
    } else if (call.approval === 'waiting') {
      const left = Math.max(0, call.askedAt + call.deadline - at);
      out.push(startTimer('approval_deadline', call.key, left, call.key));
    } else if (call.backoff) {
      out.push(startTimer('retry_backoff', call.key, this.config.retry_backoff, call.key));
    } else if (call.attempts.length === 0) {
      this.queueAttempt(call, at, out);
    }
  }

  // get_agent_snapshot (views.js).
  snapshot(sessionId) {
    return views.snapshot(this.sessions.get(sessionId), sessionId);
  }
}

function persist(entry) {
  return { type: 'Persist', entry };
}

function startTimer(kind, subject, delay, key) {
  return { type: 'StartTimer', timer: timerId(kind, subject), delay, kind, subject, key };
}

function reply(request, ok, text) {
  return { type: 'Reply', request, ok, text };
}

module.exports = { Executor };
