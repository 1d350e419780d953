"""An executor in any language, driven over the pipe protocol as if it were in process.

`PipeExecutor` satisfies `atmostonce.spec.protocol.Executor`: each `handle`, `recover` and
`snapshot` is one JSON line to the child and one back (all the commands an event causes come in
its one reply), so every layer (the lockstep, the probes, the simulator, the runtime's server)
drives it unchanged, through the one host. Building an executor opens an instance in the child
with its configuration; a restart is a fresh instance fed the journal, as in process.

One child serves every instance of a harness process, one at a time: starting a process per
executor would cost more than the hundred thousand schedules conformance replays take in
process. A child that fails is killed, and every executor built after it in that process
fails with the same finding.

Decoding a reply is a function of its line alone, and conformance replays schedules that share
their beginnings, so a child writes the same few lines over and over (936 distinct ones among
154,532 replies at depth 7): each line is decoded once and remembered (`REMEMBERED` of them), and
every caller gets a fresh list whose `Persist` entries are fresh copies, as decoding again gives.

The command comes from the environment (`ATMOSTONCE_EXECUTOR_CMD`, set by `--executor-cmd`),
so `from_environment`, named by a `module:factory` path like any other executor, is built the
same in every process a layer starts. The executor's refusal (`"refused"`) is a SpecError, as a
Python executor's; an exception it reports (`"raised"`) is an `ExecutorRaised`; anything else
is a `ChildFailed` (`atmostonce.check.executors.child`). The guard reports either as the
executor's finding.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import os
import shlex
import weakref
from collections.abc import Sequence
from typing import TypeVar

from atmostonce import arguments
from atmostonce.check.executors.child import Child, ChildFailed, What, named, split
from atmostonce.spec import protocol as p
from atmostonce.spec import protocol_json as wire
from atmostonce.spec.errors import SpecError
from atmostonce.spec.session import AgentSnapshot

COMMAND_VARIABLE = "ATMOSTONCE_EXECUTOR_CMD"
TIMEOUT_VARIABLE = "ATMOSTONCE_EXECUTOR_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
"""Seconds the harness waits for one reply before it declares the child hung."""
PATH = "atmostonce.check.executors.pipe:from_environment"
"""The `module:factory` path of the executor `--executor-cmd` names."""


REMEMBERED = 8192
"""Decoded reply lines kept per kind (commands, snapshots) before the memory starts over."""
T = TypeVar("T")


class ExecutorRaised(Exception):
    """The executor in the child reported an exception of its own (not a refusal)."""


_commands_of_line: dict[bytes, list[p.Command]] = {}
_snapshot_of_line: dict[bytes, AgentSnapshot] = {}


def _remember(memory: dict[bytes, T], line: bytes, value: T) -> T:
    if len(memory) >= REMEMBERED:
        memory.clear()
    memory[line] = value
    return value


def _copy(value: p.JSON) -> p.JSON:
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


def _fresh(commands: list[p.Command]) -> list[p.Command]:
    """Remembered commands as decoding their line again would give them: a new list, and a new
    copy of each `Persist` entry (the one mutable value among them)."""
    return [p.Persist({k: _copy(v) for k, v in c.entry.items()}) if type(c) is p.Persist
            else c for c in commands]


_children: dict[tuple[int, tuple[str, ...], float], Child] = {}


def child(argv: Sequence[str], timeout: float) -> Child:
    """The running child of this process for `argv`, started and greeted when there is none.
    Once one has failed no other is started: every later executor fails with its finding, so
    a hung child costs one timeout, not one per seed."""
    key = (os.getpid(), tuple(argv), timeout)
    found = _children.get(key)
    if found is not None and found.failed is not None:
        raise ChildFailed(found.failed)
    if found is None or not found.alive():
        found = Child(argv, timeout)
        _children[key] = found
        found.hello()
    return found


@atexit.register
def close_children() -> None:
    """End every child this process started (at exit, and when a caller is done with them)."""
    for key, running in list(_children.items()):
        if key[0] == os.getpid():
            running.close()
    _children.clear()


class _Closer:
    """Queues an instance's close on its child once the proxy is gone."""

    def __init__(self, running: Child, instance: int) -> None:
        self.line = b'{"op":"close","instance":%d}\n' % instance
        self.running = running

    def __call__(self) -> None:
        if self.running.alive():
            self.running.send(self.line)


_next_instance = [0]


class PipeExecutor:
    """One executor instance in a child process (see the module docstring)."""

    def __init__(self, running: Child, config: p.ExecutorConfig) -> None:
        _next_instance[0] += 1
        self.instance = _next_instance[0]
        self.child = running
        self._ask({"op": "open", "instance": self.instance,
                   "config": wire.encode_config(config)}, f"open({config!r})", "opened")
        weakref.finalize(self, _Closer(running, self.instance))

    def _ask(self, message: dict[str, object], what: What, expect: str) -> dict[str, object]:
        return self._expect(self.child.ask(message, what), what, expect)

    def _expect(self, reply: dict[str, object], what: What, expect: str) -> dict[str, object]:
        op = reply.get("op")
        if op == expect:
            return reply
        if op == "refused":
            raise SpecError(str(reply.get("message", "")))
        if op == "raised":
            where = reply.get("where")
            at = f" (at {where})" if where else ""
            raise ExecutorRaised(f"{reply.get('error', 'an exception')}: "
                                 f"{reply.get('message', '')}{at}")
        shown = str(reply)
        self.child.fail(f"answered {named(what)} with {shown[:200]!r}, not {expect!r}, "
                        "'refused' or 'raised'")
        raise AssertionError("unreachable")

    def _commands(self, reply: dict[str, object], what: What) -> list[p.Command]:
        try:
            return wire.decode_commands(reply.get("commands"))
        except wire.WireError as error:
            self.child.fail(f"answered {named(what)} with commands outside the protocol: "
                            f"{error}")
            raise AssertionError("unreachable") from None

    def _commands_line(self, line: bytes, what: What) -> list[p.Command]:
        known = _commands_of_line.get(line)
        if known is None:
            reply = self._expect(self.child.parse(line), what, "commands")
            known = _remember(_commands_of_line, line, self._commands(reply, what))
        return _fresh(known)

    def handle(self, event: p.Event) -> list[p.Command]:
        def what() -> str:
            return f"handle({event!r})"
        return self._commands_line(self.child.ask_line(
            {"op": "handle", "instance": self.instance, "event": wire.encode_event(event)},
            what), what)

    def recover(self, journal: Sequence[dict[str, p.JSON]], at: float) -> list[p.Command]:
        what = f"recover({len(journal)} journal entries, at={at!r})"
        return self._commands_line(self.child.ask_line(
            {"op": "recover", "instance": self.instance, "journal": list(journal), "at": at},
            what), what)

    def snapshot(self, session_id: str) -> AgentSnapshot:
        what = f"snapshot({session_id!r})"
        line = self.child.ask_line({"op": "snapshot", "instance": self.instance,
                                    "session_id": session_id}, what)
        known = _snapshot_of_line.get(line)
        if known is not None:
            return known
        reply = self._expect(self.child.parse(line), what, "snapshot")
        try:
            return _remember(_snapshot_of_line, line, wire.decode_snapshot(reply.get("snapshot")))
        except wire.WireError as error:
            self.child.fail(f"answered {what} with a snapshot outside the protocol: "
                            f"{error}")
            raise AssertionError("unreachable") from None


def settings() -> tuple[list[str], float]:
    """The command and timeout `--executor-cmd` put in the environment; SpecError when none."""
    command = os.environ.get(COMMAND_VARIABLE)
    if not command:
        raise SpecError(f"{PATH} runs the command --executor-cmd gave, from "
                        f"{COMMAND_VARIABLE}, which is not set: give --executor-cmd CMD "
                        "instead of this path")
    timeout = float(os.environ.get(TIMEOUT_VARIABLE, DEFAULT_TIMEOUT))
    return list(_split(command)), timeout


@functools.lru_cache(maxsize=16)
def _split(command: str) -> tuple[str, ...]:
    """`split`, once per command: every executor conformance builds asks for it."""
    return tuple(split(command))


def from_environment(config: p.ExecutorConfig) -> p.Executor:
    """An executor instance in the child running `ATMOSTONCE_EXECUTOR_CMD`."""
    argv, timeout = settings()
    return PipeExecutor(child(argv, timeout), config)


def use(command: str, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Make `command` the executor `PATH` names, here and in every process started from now on,
    and start it once; the path. SpecError when the command cannot be started."""
    argv = split(command)
    os.environ[COMMAND_VARIABLE] = command
    os.environ[TIMEOUT_VARIABLE] = repr(timeout)
    with contextlib.suppress(ChildFailed):
        child(argv, timeout)
    return PATH


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`--executor-cmd` and `--executor-timeout`, for a command that takes `--executor`."""
    parser.add_argument("--executor-cmd", metavar="\"CMD ARGS\"",
                        help="check an executor in any language instead: a command that speaks "
                        "the pipe protocol on stdin and stdout (docs/executor-protocol.md), "
                        "such as \"node examples/executor-js/main.js\"")
    parser.add_argument("--executor-timeout", type=arguments.positive, default=DEFAULT_TIMEOUT,
                        metavar="S", help="seconds to wait for each reply of the "
                        f"--executor-cmd child before it counts as hung (default "
                        f"{DEFAULT_TIMEOUT:g})")


def chosen(args: argparse.Namespace, default: str | None) -> bool:
    """With `--executor-cmd`, start its child and make `args.executor` the path that builds
    it; whether it was given. SpecError with `--executor` too."""
    if args.executor_cmd is None:
        return False
    if args.executor is not None and args.executor != default:
        raise SpecError("give --executor or --executor-cmd, not both")
    args.executor = use(args.executor_cmd, args.executor_timeout)
    return True


def shown(text: str) -> str:
    """`text` with an `--executor` naming the path of the `--executor-cmd` executor written as
    the `--executor-cmd` that gave it, so a replay command printed can be run, and a summary's
    "on PATH" as the command; the path in a test to paste stays (it runs where
    `ATMOSTONCE_EXECUTOR_CMD` is set)."""
    command = os.environ.get(COMMAND_VARIABLE)
    if not command or PATH not in text:
        return text
    given = f"--executor-cmd {shlex.quote(command)}"
    return text.replace(f"--executor {PATH}", given).replace(f"on {PATH}", f"on {given}")
