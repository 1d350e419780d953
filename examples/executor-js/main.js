'use strict';
// An executor in plain JavaScript served over the pipe protocol (docs/executor-protocol.md):
// one JSON request per line on stdin, one reply per line on stdout, diagnostics on stderr.
//
//   atmostonce verify --executor-cmd "node examples/executor-js/main.js"

const { Executor } = require('./executor');
const { SpecError } = require('./spec');
const { parseLine, decodeEvent } = require('./wire');

const PROTOCOL = 1;

function serve(input, output) {
  const instances = new Map();
  let greeted = false;

  const instance = (message) => {
    const found = instances.get(message.instance);
    if (!found) throw new SpecError(`${message.op}: no open instance ${message.instance}`);
    return found;
  };

  const ops = {
    open(message) {
      if (!Number.isInteger(message.instance) || instances.has(message.instance)) {
        throw new SpecError(`open: instance ${message.instance} is not a new whole number`);
      }
      instances.set(message.instance, new Executor(message.config));
      return { op: 'opened' };
    },
    handle(message) {
      return { op: 'commands', commands: instance(message).handle(decodeEvent(message.event)) };
    },
    recover(message) {
      const executor = instance(message);
      if (typeof message.at !== 'number' || !Number.isFinite(message.at)) {
        throw new SpecError('recover: at must be a finite number');
      }
      return { op: 'commands', commands: executor.recover(message.journal, message.at) };
    },
    snapshot(message) {
      if (typeof message.session_id !== 'string') {
        throw new SpecError('snapshot: session_id must be a string');
      }
      return { op: 'snapshot', snapshot: instance(message).snapshot(message.session_id) };
    },
    close(message) {
      instances.delete(message.instance);
      return null;
    },
  };

  const answer = (message) => {
    if (!greeted) {
      if (message.op !== 'hello') {
        process.stderr.write(`executor-js: the first line must be hello, got ${message.op}\n`);
        process.exit(2);
      }
      greeted = true;
      if (message.protocol !== PROTOCOL) {
        return { op: 'refuse', reason: `this executor speaks protocol ${PROTOCOL}, not ${message.protocol}` };
      }
      return { op: 'hello', protocol: PROTOCOL, executor: 'executor-js' };
    }
    const op = Object.hasOwn(ops, message.op) ? ops[message.op] : null;
    if (!op) return { op: 'refused', message: `unknown op ${JSON.stringify(message.op)}` };
    try {
      return op(message);
    } catch (error) {
      if (error instanceof SpecError) return { op: 'refused', message: oneLine(error.message) };
      const frame = (error.stack || '').split('\n')[1] || '';
      return {
        op: 'raised', error: error.name || 'Error', message: oneLine(String(error.message)),
        where: frame.trim(),
      };
    }
  };

  let buffer = '';
  input.setEncoding('utf8');
  input.on('data', (chunk) => {
    buffer += chunk;
    let end = buffer.indexOf('\n');
    while (end >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.trim()) {
        const reply = answer(request(line));
        if (reply !== null) output.write(`${JSON.stringify(reply)}\n`);
        if (reply !== null && reply.op === 'refuse') process.exit(0);
      }
      end = buffer.indexOf('\n');
    }
  });
  input.on('end', () => process.exit(0));
}

// A request line, or exit 2 with one line on stderr for a line that is not the protocol.
function request(line) {
  let message;
  try {
    message = parseLine(line);
  } catch {
    message = null;
  }
  if (message === null || typeof message !== 'object' || Array.isArray(message)) {
    process.stderr.write(`executor-js: a line that is not a JSON object: ${line.slice(0, 80)}\n`);
    process.exit(2);
  }
  return message;
}

function oneLine(text) {
  return text.split(/\s+/).join(' ');
}

if (require.main === module) serve(process.stdin, process.stdout);

module.exports = { serve };
