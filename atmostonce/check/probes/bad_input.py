"""Bad input an executor must refuse, probed on fresh executors before conformance replays the
model's schedules (which only ever ask with well-formed ids and answer calls that exist):

- an ask whose session, turn or tool-call id (or every one of them) is empty, holds '/',
  white space or is not text raises SpecError and leaves no call behind: a key built from it
  would be ambiguous (D-2);
- an answer naming a key no call has gets one refusing `Reply` and nothing else (D-7's
  table has no row for it; it must not be taken as an approval);
- a user message to a session nobody opened gets one refusing `Reply` and nothing else: a
  history that no session shows would be written to the journal (TC-RCN-TELL);
- options outside `ExecutorConfig`'s documented range (fewer than one attempt, a duration
  that is negative, not finite or not a number, a lease no shorter than the heartbeat
  timeout) make the factory raise SpecError, and options at the edge of that range (one
  attempt, zero durations, a lease just shorter than the heartbeat timeout) are taken: a lease
  that outlasts the heartbeat timeout lets a worker declared lost go on running (D-12).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import (
    Answer,
    Ask,
    Command,
    Executor,
    ExecutorConfig,
    ExecutorFactory,
    Reply,
    SetPolicy,
    UserMessage,
)

TOOL = "probe_tool"
GOOD = ("s1", "t1", "c1")
BAD_COMPONENTS: tuple[object, ...] = ("", "a/b", "a b", "/", 7)
"""Components D-2 refuses: empty, with the separator, with white space, only the separator,
not text."""


def probe(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    """One line per bad input the executor took, or failed on otherwise than with a
    SpecError; empty when it refused every one."""
    try:
        return _probe(factory, config)
    except Exception as error:
        return [f"the executor failed on a bad-input probe: {type(error).__name__}: {error}"]


def _probe(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    problems: list[str] = []
    for position, name in enumerate(("session_id", "turn_id", "tool_call_id")):
        for bad in BAD_COMPONENTS:
            ids = list(GOOD)
            ids[position] = bad  # type: ignore[call-overload]
            problem = _bad_ask(factory(config), tuple(ids), name, bad)
            if problem:
                problems.append(problem)
                break
    every = _bad_ask(factory(config), ("a/b", "c/d", "e/f"), "every id", "a/b, c/d, e/f")
    if every:
        problems.append(every)
    for check in (_unknown_answer, _unknown_session_message):
        problem = check(factory(config))
        if problem:
            problems.append(problem)
    problems.extend(_config_problems(factory, config))
    return problems


DURATIONS = ("retry_backoff", "queue_timeout", "run_timeout", "heartbeat_timeout", "lease",
             "approval_deadline")
BAD_ATTEMPTS: tuple[object, ...] = (0, -1, True, 2.5, "3")
BAD_DURATIONS: tuple[object, ...] = (-1.0, float("nan"), float("inf"), True, "1")


def out_of_range(config: ExecutorConfig) -> list[tuple[str, ExecutorConfig]]:
    """Options outside ExecutorConfig's range, each named, built from `config`."""
    bad = [(f"max_attempts={value!r}", _with(config, "max_attempts", value))
           for value in BAD_ATTEMPTS]
    for name in DURATIONS:
        bad.extend((f"{name}={value!r}", _with(config, name, value)) for value in BAD_DURATIONS)
    beat = config.heartbeat_timeout
    bad.append((f"lease={beat!r} with heartbeat_timeout={beat!r}",
                dataclasses.replace(config, lease=beat)))
    bad.append((f"lease={beat * 2!r} with heartbeat_timeout={beat!r}",
                dataclasses.replace(config, lease=beat * 2)))
    return bad


def at_the_edge(config: ExecutorConfig) -> list[tuple[str, ExecutorConfig]]:
    """Options at the edge of the range, each named, built from `config`."""
    edge = [("max_attempts=1", dataclasses.replace(config, max_attempts=1))]
    edge.extend((f"{name}=0", _with(config, name, 0.0))
                for name in DURATIONS if name != "heartbeat_timeout")
    below = config.heartbeat_timeout * 0.999
    edge.append((f"lease={below!r} with heartbeat_timeout={config.heartbeat_timeout!r}",
                 dataclasses.replace(config, lease=below)))
    return edge


def _with(config: ExecutorConfig, name: str, value: object) -> ExecutorConfig:
    changed: dict[str, Any] = {name: value}
    return dataclasses.replace(config, **changed)


def _config_problems(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    problems: list[str] = []
    for name, bad in out_of_range(config):
        try:
            factory(bad)
        except SpecError:
            continue
        except Exception as error:
            problems.append(f"the executor failed on the options {name}, outside "
                            f"ExecutorConfig's range, with {type(error).__name__}: {error}, "
                            "not a SpecError")
            continue
        problems.append(f"the executor took the options {name}, outside ExecutorConfig's "
                        "range, instead of refusing them with a SpecError")
    for name, edge in at_the_edge(config):
        try:
            factory(edge)
        except Exception as error:
            problems.append(f"the executor refused the options {name}, inside "
                            f"ExecutorConfig's range: {type(error).__name__}: {error}")
    return problems


def _ready(executor: Executor) -> None:
    executor.handle(SetPolicy(0.0, TOOL, ToolPolicy(EffectClass.READ)))


def _bad_ask(executor: Executor, ids: tuple[object, ...], name: str, bad: object) -> str:
    _ready(executor)
    session, turn, call = ids
    ask = Ask(1.0, session, turn, call, TOOL)  # type: ignore[arg-type]
    try:
        commands = executor.handle(ask)
    except SpecError:
        commands = None
    if commands is not None:
        return (f"D-2: an ask with {name}={bad!r} was taken (commands "
                f"{_names(commands)}), not refused with a SpecError: its key is ambiguous")
    session_id = session if isinstance(session, str) and session else GOOD[0]
    try:
        calls = executor.snapshot(session_id).tool_calls
    except SpecError:
        calls = ()
    left = [c for c in calls if c.tool_call_id == call and c.turn_id == turn]
    if left:
        return f"D-2: the refused ask with {name}={bad!r} left a call in the snapshot"
    return ""


def _unknown_answer(executor: Executor) -> str:
    return _refused(executor, Answer(1.0, "probe-1", "s1/t1/no-such-call", True),
                    "D-7: an answer to a key no call has")


def _unknown_session_message(executor: Executor) -> str:
    return _refused(executor, UserMessage(1.0, "probe-1", "no-such-session", "hello"),
                    "TC-RCN-TELL: a user message to a session nobody opened")


def _refused(executor: Executor, event: Answer | UserMessage, what: str) -> str:
    """Empty when the request gets one refusing `Reply` and nothing else; else what it got."""
    _ready(executor)
    commands = executor.handle(event)
    replies = [c for c in commands if isinstance(c, Reply)]
    if len(replies) != 1 or len(commands) != 1 or replies[0].request != event.request:
        return f"{what} must get one Reply and nothing else, got {_names(commands)}"
    if replies[0].ok:
        return f"{what} was accepted"
    return ""


def _names(commands: list[Command]) -> str:
    return "[" + ", ".join(type(c).__name__ for c in commands) + "]"
