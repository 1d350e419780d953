'use strict';
// The protocol's values on the wire: a JSON line in (with the bare NaN and Infinity tokens a
// Python harness may write), and each event checked field by field before it reaches the
// executor, so a value of the wrong type is refused in one line like any bad input.

const spec = require('./spec');

const { SpecError } = spec;

// JSON.parse, plus NaN, Infinity and -Infinity outside strings. A line with one of those is
// no JSON, so JSON.parse throws on it and only then is the line read character by character.
const NONFINITE = '\u0000nonfinite:';
function parseLine(line) {
  try {
    return JSON.parse(line);
  } catch {
    return parseNonfinite(line);
  }
}

function parseNonfinite(line) {
  let text = '';
  let inString = false;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (inString) {
      text += c;
      if (c === '\\') { text += line[i + 1]; i += 1; } else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      text += c;
    } else {
      const token = /^(-?Infinity|NaN)/.exec(line.slice(i, i + 9));
      if (token) {
        text += JSON.stringify(NONFINITE + token[1]);
        i += token[1].length - 1;
      } else {
        text += c;
      }
    }
  }
  return JSON.parse(text, (_, v) => (typeof v === 'string' && v.startsWith(NONFINITE)
    ? Number(v.slice(NONFINITE.length)) : v));
}

const is = {
  str: (v) => typeof v === 'string',
  num: (v) => typeof v === 'number',
  bool: (v) => typeof v === 'boolean',
  strs: (v) => Array.isArray(v) && v.every((s) => typeof s === 'string'),
  effect: (v) => v === null || spec.EFFECTS.includes(v),
  deadline: (v) => v === null || (typeof v === 'number' && Number.isFinite(v) && v >= 0),
  object: (v) => v === null || (typeof v === 'object' && !Array.isArray(v)),
};

// Each event's fields: [name, check, default (undefined: required)].
const EVENTS = {
  SetPolicy: [['tool', 'str'], ['policy', 'object', null], ['hints', 'object', null]],
  OpenSession: [['session_id', 'str'], ['default_effect', 'effect', null],
    ['hints_may_lower', 'bool', true]],
  // The ids are checked by the key's own rule (D-2), which names the part at fault.
  Ask: [['session_id', null], ['turn_id', null], ['tool_call_id', null], ['tool', 'str'],
    ['arguments', 'str', '{}'], ['approval_deadline', 'deadline', null]],
  Answer: [['request', 'str'], ['key', 'str'], ['approve', 'bool']],
  UserMessage: [['request', 'str'], ['session_id', 'str'], ['text', 'str']],
  Connected: [['worker', 'str'], ['running', 'strs', []]],
  Poll: [['worker', 'str']],
  Started: [['worker', 'str'], ['attempt', 'str']],
  Heartbeat: [['worker', 'str'], ['attempt', 'str']],
  Finished: [['worker', 'str'], ['attempt', 'str'], ['ok', 'bool'], ['output', 'str', '']],
  TimerFired: [['timer', 'str']],
};

function decodeEvent(raw) {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new SpecError('event must be an object');
  }
  const fields = EVENTS[raw.type];
  if (!fields) throw new SpecError(`unknown event type ${JSON.stringify(raw.type)}`);
  if (typeof raw.at !== 'number' || !Number.isFinite(raw.at)) {
    throw new SpecError(`${raw.type}.at must be a finite number, got ${spec.kindOf(raw.at)}`);
  }
  const event = { type: raw.type, at: raw.at };
  for (const [name, check, fallback] of fields) {
    const value = name in raw ? raw[name] : fallback;
    if (value === undefined) throw new SpecError(`${raw.type}.${name} is required`);
    if (check && !is[check](value)) {
      throw new SpecError(`${raw.type}.${name} has the wrong type: ${spec.kindOf(value)}`);
    }
    event[name] = value;
  }
  if (event.type === 'SetPolicy') {
    event.policy = decodePolicy(event.policy);
    event.hints = decodeHints(event.hints);
  }
  return event;
}

function decodePolicy(raw) {
  if (raw === null) return null;
  const policy = {
    effect: raw.effect,
    requires_approval: raw.requires_approval === undefined ? null : raw.requires_approval,
    approval_deadline: raw.approval_deadline === undefined ? null : raw.approval_deadline,
  };
  if (!spec.EFFECTS.includes(policy.effect)) {
    throw new SpecError(`policy.effect must be one of ${spec.EFFECTS.join(', ')}`);
  }
  if (policy.requires_approval !== null && typeof policy.requires_approval !== 'boolean') {
    throw new SpecError('policy.requires_approval must be true, false or null');
  }
  if (!is.deadline(policy.approval_deadline)) {
    throw new SpecError('policy.approval_deadline must be a finite number >= 0 or null');
  }
  return policy;
}

function decodeHints(raw) {
  if (raw === null) return null;
  const hints = {};
  for (const name of ['read_only', 'idempotent', 'destructive']) {
    const value = raw[name] === undefined ? null : raw[name];
    if (value !== null && typeof value !== 'boolean') {
      throw new SpecError(`hints.${name} must be true, false or null`);
    }
    hints[name] = value;
  }
  return hints;
}

module.exports = { parseLine, decodeEvent };
