"""The one place that tells an executor under test stepping outside the protocol.

An executor under test is someone else's code: it may raise, return a tuple or None where the
protocol asks for a list of commands, put a string among its commands, give a command a field of
the wrong type, or answer `snapshot` with a dict. A harness that carried such a result out would
crash somewhere far from the cause, or, worse, quietly skip it. `Guarded` wraps an executor so
that every `handle`, `recover` and `snapshot` either returns a value of the protocol's types or
raises `ProtocolBreach`, one line naming the call (the event handled, the journal recovered,
the session asked for) and what was wrong (the exception with its type, message and place, or
the value and the type it should have had). `build` makes one from a factory, whose failures are
breaches too. Every layer that drives an executor (conformance, the simulator) reports a breach
as its finding; the real runtime's server checks what it carries out on its side.

The types checked are the ones `atmostonce.spec.protocol` and `atmostonce.spec.session`
declare on their dataclasses, read from their annotations, so a field added there is checked
here. The checks run on every result the simulator carries out (some sixteen commands per
simulated tool call), so the common case is compiled: straight-line code of exact `type(...)
is` tests for each class (`atmostonce.check.executors.exact_types`). Only when it fails does the
precise check run (`atmostonce.check.executors.type_problems`), which accepts subclasses (a str
subclass is a str, an int is a float) and words the problem. A Persist's
entry is checked to be a dict on every result, and to hold JSON all the way down when
`json_entries` is on (the conformance layer's choice; the runtime's journal checks it by
writing it).
"""

from __future__ import annotations

import traceback
import typing
from collections.abc import Callable, Sequence
from typing import Any

from atmostonce.check.executors.exact_types import Compiler, Handle, json_ok
from atmostonce.check.executors.type_problems import (
    COMMANDS,
    commands_problem,
    json_problem,
    quoted,
    snapshot_problem,
)
from atmostonce.spec import protocol as p
from atmostonce.spec.session import AgentSnapshot

SHOWN = 300
"""Characters of a call or a wrong value a breach quotes."""

_METHODS = ("handle", "recover", "snapshot")
_OFTEN_FIRST: tuple[type[p.Command], ...] = (p.StartTimer, p.Persist, p.StopTimer)
"""The commands an executor returns most often, tested first."""


class ProtocolBreach(Exception):
    """The executor under test did something outside the protocol: `call` names what the
    harness asked of it, `problem` what it did instead."""

    def __init__(self, call: str, problem: str) -> None:
        super().__init__(f"{call} {problem}")
        self.call = call
        self.problem = problem


def raised(error: BaseException) -> str:
    """An exception as a breach words it: its type, its message on one line and where the
    executor raised it."""
    message = " ".join(str(error).split())
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"raised {type(error).__name__}: {message}{where}"


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN - 3]}..."


# ---------------------------------------------------------------------------------------------
# The fast check, compiled (`atmostonce.check.executors.exact_types`), and the precise one it
# falls back on (`atmostonce.check.executors.type_problems`)


def _handle_call(event: p.Event) -> str:
    return f"handle({event!r})"


def _breach(call: str, error: BaseException) -> ProtocolBreach:
    return ProtocolBreach(_cut(call), raised(error))


def _check(commands: object, call: Callable[[Any], str], subject: object) -> None:
    """The precise check of a result the fast one refused: a breach naming `call(subject)`, or
    nothing when only exact types were off (a subclass where its base is declared)."""
    found = commands_problem(commands)
    if found is not None:
        raise ProtocolBreach(_cut(call(subject)), _cut(found))


def _compile() -> tuple[Callable[[Handle], Handle], Callable[[object], bool],
                        Callable[[object], bool]]:
    compiler = Compiler()
    ordered = [*_OFTEN_FIRST, *(c for c in COMMANDS if c not in _OFTEN_FIRST)]
    return (compiler.handler(ordered, _breach, _check, _handle_call), compiler.commands(ordered),
            compiler.value(AgentSnapshot))


_guard_handle, _commands_ok, _snapshot_ok = _compile()


# ---------------------------------------------------------------------------------------------
# The guarded executor


class Guarded:
    """An executor under test whose every answer is of the protocol's types, or a
    `ProtocolBreach` (see the module docstring). `handle` is compiled (`Compiler.handler`):
    the simulator calls it for every event."""

    __slots__ = ("_recover", "_snapshot", "executor", "handle")

    handle: Handle

    def __init__(self, executor: p.Executor) -> None:
        self.executor = executor
        self.handle = _guard_handle(executor.handle)
        self._recover = executor.recover
        self._snapshot = executor.snapshot

    def recover(self, journal: Sequence[dict[str, p.JSON]], at: float) -> list[p.Command]:
        try:
            commands = self._recover(journal, at)
        except Exception as error:
            raise _breach(_recover_call(journal, at), error) from error
        if not _commands_ok(commands):
            _check(commands, lambda _: _recover_call(journal, at), None)
        return commands

    def snapshot(self, session_id: str) -> AgentSnapshot:
        try:
            snapshot = self._snapshot(session_id)
        except Exception as error:
            raise _breach(f"snapshot({session_id!r})", error) from error
        if not _snapshot_ok(snapshot):
            found = snapshot_problem(snapshot)
            if found is not None:
                raise ProtocolBreach(_cut(f"snapshot({session_id!r})"), _cut(found))
        return snapshot


def _recover_call(journal: Sequence[object], at: float) -> str:
    return f"recover({len(journal)} journal entries, at={at!r})"


class GuardedEntries(Guarded):
    """A guarded executor whose persisted entries are also checked to be JSON all the way
    down, as a journal stores them."""

    __slots__ = ()

    def __init__(self, executor: p.Executor) -> None:
        super().__init__(executor)
        handle = self.handle

        def handle_entries(event: p.Event) -> list[p.Command]:
            commands = handle(event)
            _check_entries(commands, _handle_call, event)
            return commands

        self.handle = handle_entries

    def recover(self, journal: Sequence[dict[str, p.JSON]], at: float) -> list[p.Command]:
        commands = super().recover(journal, at)
        _check_entries(commands, lambda _: _recover_call(journal, at), None)
        return commands


def _check_entries(commands: list[p.Command], call: Callable[[Any], str],
                   subject: object) -> None:
    for i, command in enumerate(commands):
        if type(command) is p.Persist and not json_ok(command.entry):
            found = json_problem(command.entry, "entry")
            if found is not None:
                raise ProtocolBreach(_cut(call(subject)),
                                     _cut(f"returned a Persist (item {i}) whose {found}"))


def build(factory: p.ExecutorFactory, config: p.ExecutorConfig,
          json_entries: bool = False) -> Guarded:
    """A guarded executor from `factory` (`GuardedEntries` with `json_entries`); a factory that
    raises, or builds something without the protocol's methods, is a breach too."""
    try:
        executor: object = factory(config)
    except Exception as error:
        raise _breach(f"the executor factory, given {config!r},", error) from error
    missing = [name for name in _METHODS if not callable(getattr(executor, name, None))]
    if missing:
        raise ProtocolBreach(_cut(f"the executor factory, given {config!r},"),
                             f"returned {quoted(executor)}, which has no {', '.join(missing)}")
    guarded = GuardedEntries if json_entries else Guarded
    return guarded(typing.cast(p.Executor, executor))
