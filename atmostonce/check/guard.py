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
is` tests for each class. Only when it fails does the precise check run, which accepts
subclasses (a str subclass is a str, an int is a float) and words the problem. A Persist's
entry is checked to be a dict on every result, and to hold JSON all the way down when
`json_entries` is on (the conformance layer's choice; the runtime's journal checks it by
writing it).
"""

from __future__ import annotations

import dataclasses
import functools
import reprlib
import traceback
import typing
from collections.abc import Callable, Sequence
from typing import Any

from atmostonce.spec import protocol as p
from atmostonce.spec.session import AgentSnapshot

SHOWN = 300
"""Characters of a call or a wrong value a breach quotes."""

_METHODS = ("handle", "recover", "snapshot")
_SCALARS = frozenset({str, int, float, bool, type(None)})
_COMMANDS: tuple[type[p.Command], ...] = tuple(
    cls for cls in p.Command.__subclasses__() if cls.__module__ == p.__name__)
_OFTEN_FIRST: tuple[type[p.Command], ...] = (p.StartTimer, p.Persist, p.StopTimer)
"""The commands an executor returns most often, tested first."""
_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60
_short.maxlist = _short.maxtuple = _short.maxdict = 3
_short.maxlevel = 2


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


def quoted(value: object) -> str:
    """A value as a breach quotes it: its type with a short repr."""
    if value is None:
        return "None"
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name} ({_short.repr(value)})"


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else f"{text[:SHOWN - 3]}..."


# ---------------------------------------------------------------------------------------------
# The precise check: any value against a declared type, the problem worded


@functools.cache
def _hints(cls: type) -> tuple[tuple[str, object], ...]:
    """Each field of the dataclass `cls` with its declared type."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _bare_name(hint: object) -> str:
    origin = typing.get_origin(hint)
    if origin is dict:
        return "dict of JSON values"
    if origin is tuple:
        return f"tuple of {_bare_name(typing.get_args(hint)[0])}s"
    return str(getattr(hint, "__name__", hint))


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def problem(value: object, hint: object, where: str) -> str | None:
    """What is wrong with `value` as a `hint` (a protocol field's declared type), worded as
    `where` is ..., or None; `where` is the path to the value, such as `event.status`."""
    origin = typing.get_origin(hint)
    if origin is dict:
        return json_problem(value, where)
    if origin is tuple:
        if not isinstance(value, tuple):
            return f"{where} is {quoted(value)}, not {_a(_bare_name(hint))}"
        item = typing.get_args(hint)[0]
        for i, element in enumerate(value):
            found = problem(element, item, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if hint is float:
        fits = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        fits = isinstance(value, typing.cast(type, hint))
    if not fits:
        return f"{where} is {quoted(value)}, not {_a(_bare_name(hint))}"
    if dataclasses.is_dataclass(hint):
        for name, field_hint in _hints(typing.cast(type, hint)):
            found = problem(getattr(value, name), field_hint, _at(where, name))
            if found is not None:
                return found
    return None


def json_problem(value: object, where: str) -> str | None:
    """What keeps `value` from being a journal entry (a dict of str keys and JSON values all the
    way down: str, int, float, bool, None, lists and such dicts), or None."""
    if not isinstance(value, dict):
        return f"{where} is {quoted(value)}, not a dict of JSON values"
    return _json_value_problem(value, where)


def _json_value_problem(value: object, where: str) -> str | None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has the key {quoted(key)}, not a str"
            found = _json_value_problem(item, f"{where}[{key!r}]")
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _json_value_problem(item, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if type(value) in _SCALARS or isinstance(value, str | int | float):
        return None
    return f"{where} is {quoted(value)}, which is not JSON"


def commands_problem(commands: object) -> str | None:
    """What keeps a `handle` or `recover` result from being a list of protocol commands whose
    fields have their declared types, worded after 'returned', or None."""
    if not isinstance(commands, list):
        return f"returned {quoted(commands)}, not a list of commands"
    for i, command in enumerate(commands):
        if type(command) not in _COMMANDS:
            return (f"returned a list whose item {i} is {quoted(command)}, not one of the "
                    "protocol's commands")
        found = problem(command, type(command), "")
        if found is not None:
            return f"returned {_a(type(command).__name__)} (item {i}) whose {found}"
    return None


def snapshot_problem(snapshot: object) -> str | None:
    """What keeps a `snapshot` result from being an AgentSnapshot of ToolCallViews and
    Messages, worded after 'returned', or None."""
    if not isinstance(snapshot, AgentSnapshot):
        return f"returned {quoted(snapshot)}, not an AgentSnapshot"
    found = problem(snapshot, AgentSnapshot, "")
    return None if found is None else f"returned an AgentSnapshot whose {found}"


# ---------------------------------------------------------------------------------------------
# The fast check: exact types, compiled from the same annotations


class _Compiler:
    """Writes, from the declared field types, Python code that tests a value and every field in
    it for exactly its declared type, and compiles it."""

    def __init__(self) -> None:
        self.names: dict[str, object] = {}
        self.loops = 0

    def name(self, thing: object) -> str:
        """A global name for `thing` in the compiled code."""
        for name, known in self.names.items():
            if known is thing:
                return name
        name = f"_g{len(self.names)}"
        self.names[name] = thing
        return name

    def test(self, hint: object, var: str) -> str:
        """An expression that holds when `var` has exactly the type `hint` (a dataclass: its
        own type only; a dict: the type only, its contents are JSON's business)."""
        origin = typing.get_origin(hint)
        if origin is dict or origin is tuple:
            return f"type({var}) is {origin.__name__}"
        if hint is float:
            return f"(type({var}) is float or type({var}) is int)"
        return f"type({var}) is {self.name(hint)}"

    def check(self, hint: object, var: str, indent: str, fail: str) -> list[str]:
        """Lines that run `fail` unless `var` and everything in it have their types."""
        lines = [f"{indent}if not ({self.test(hint, var)}):", f"{indent}    {fail}"]
        if typing.get_origin(hint) is tuple:
            if fail == "break":
                raise TypeError(f"{var}: a tuple field cannot be tested inside the loop over "
                                "commands")
            self.loops += 1
            item = f"_i{self.loops}"
            lines.append(f"{indent}for {item} in {var}:")
            lines += self.check(typing.get_args(hint)[0], item, indent + "    ", fail)
        elif dataclasses.is_dataclass(hint):
            lines += self.fields(typing.cast(type, hint), var, indent, fail)
        return lines

    def fields(self, cls: type, var: str, indent: str, fail: str) -> list[str]:
        """Lines that run `fail` unless every field of `var`, a `cls`, has its type: one test
        of the plain fields, then what the nested ones need."""
        plain = [self.test(h, f"{var}.{n}") for n, h in _hints(cls) if not _nested(h)]
        lines = [f"{indent}if not ({' and '.join(plain)}):", f"{indent}    {fail}"] \
            if plain else []
        for name, hint in _hints(cls):
            if _nested(hint):
                lines += self.check(hint, f"{var}.{name}", indent, fail)
        return lines

    def compile(self, source: list[str], name: str) -> Any:
        space = dict(self.names)
        exec("\n".join(source), space)
        return space[name]

    def handler(self, classes: Sequence[type[p.Command]]) -> Callable[[Handle], Handle]:
        """A function that wraps an executor's `handle` into one that turns what it raises into
        a breach, returns a list of commands each of exactly one of `classes` with every field
        of its declared type at once, and leaves anything else to the precise check."""
        self.names.update(_breach=_breach, _check=_check, _handle_call=_handle_call)
        body = ["        if type(x) is list:",
                "            for c in x:",
                "                t = type(c)"]
        for i, cls in enumerate(classes):
            body.append(f"                {'if' if i == 0 else 'elif'} t is {self.name(cls)}:")
            body += self.fields(cls, "c", " " * 20, "break") or ["                    pass"]
        body += ["                else:",
                 "                    break",
                 "            else:",
                 "                return x",
                 "        _check(x, _handle_call, event)",
                 "        return x"]
        lines = ["def make(inner):",
                 "    def handle(event):",
                 "        try:",
                 "            x = inner(event)",
                 "        except Exception as error:",
                 "            raise _breach(_handle_call(event), error) from error",
                 *body,
                 "    return handle"]
        made: Callable[[Handle], Handle] = self.compile(lines, "make")
        return made

    def commands(self, classes: Sequence[type[p.Command]]) -> Callable[[object], bool]:
        """A function that holds for a list of commands each of exactly one of `classes`, with
        every field of its declared type."""
        body = ["    if type(x) is not list:", "        return False",
                "    for c in x:", "        t = type(c)"]
        for i, cls in enumerate(classes):
            body.append(f"        {'if' if i == 0 else 'elif'} t is {self.name(cls)}:")
            body += self.fields(cls, "c", " " * 12, "return False") or ["            pass"]
        body += ["        else:", "            return False", "    return True"]
        made: Callable[[object], bool] = self.compile(["def ok(x):", *body], "ok")
        return made

    def value(self, cls: type) -> Callable[[object], bool]:
        """A function that holds for a value of exactly the dataclass `cls`, fields and all."""
        body = [*self.check(cls, "x", "    ", "return False"), "    return True"]
        made: Callable[[object], bool] = self.compile(["def ok(x):", *body], "ok")
        return made


Handle = Callable[[p.Event], list[p.Command]]


def _nested(hint: object) -> bool:
    """Whether a field's type needs more than a test of its own type."""
    return typing.get_origin(hint) is tuple or dataclasses.is_dataclass(hint)


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
    compiler = _Compiler()
    ordered = [*_OFTEN_FIRST, *(c for c in _COMMANDS if c not in _OFTEN_FIRST)]
    return compiler.handler(ordered), compiler.commands(ordered), compiler.value(AgentSnapshot)


_guard_handle, _commands_ok, _snapshot_ok = _compile()


def _json_ok(value: dict[Any, Any]) -> bool:
    """Whether a dict has str keys and exactly JSON values all the way down (fast, the scalar
    values tested inline; the precise `json_problem` says what is wrong)."""
    for key, item in value.items():
        if type(key) is not str:
            return False
        kind = type(item)
        if kind is str or kind is float or kind is int or kind is bool or item is None:
            continue
        if not _json_nested_ok(item):
            return False
    return True


def _json_nested_ok(item: object) -> bool:
    """Whether a value that is no JSON scalar is a JSON list or object."""
    if type(item) is dict:
        return _json_ok(item)
    if type(item) is list:
        return all(type(element) in _SCALARS or _json_nested_ok(element) for element in item)
    return False


# ---------------------------------------------------------------------------------------------
# The guarded executor


class Guarded:
    """An executor under test whose every answer is of the protocol's types, or a
    `ProtocolBreach` (see the module docstring). `handle` is compiled (`_Compiler.handler`):
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
        if type(command) is p.Persist and not _json_ok(command.entry):
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
