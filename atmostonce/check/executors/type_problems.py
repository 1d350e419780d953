"""The precise check of what an executor under test answers: any value against the type a
protocol dataclass declares for it (read from the annotations of `atmostonce.spec.protocol` and
`atmostonce.spec.session`), accepting subclasses (a str subclass is a str, an int is a float),
and the problem worded, for `atmostonce.check.executors.guard` to quote in a breach. It runs only on
a result the fast check (`atmostonce.check.executors.exact_types`) refused.
"""

from __future__ import annotations

import dataclasses
import functools
import reprlib
import types
import typing

from atmostonce.spec import protocol as p
from atmostonce.spec.errors import a_value_of
from atmostonce.spec.session import AgentSnapshot

COMMANDS: tuple[type[p.Command], ...] = tuple(
    cls for cls in p.Command.__subclasses__() if cls.__module__ == p.__name__)
"""The protocol's commands: what a `handle` or `recover` result may hold."""
SCALARS = frozenset({str, int, float, bool, type(None)})
"""The exact types of JSON's scalar values."""
_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60
_short.maxlist = _short.maxtuple = _short.maxdict = 3
_short.maxlevel = 2


def quoted(value: object) -> str:
    """A value as a breach quotes it: its type with a short repr."""
    if value is None:
        return "None"
    return f"{a_value_of(type(value).__name__)} ({_short.repr(value)})"


@functools.cache
def hints(cls: type) -> tuple[tuple[str, object], ...]:
    """Each field of the dataclass `cls` with its declared type."""
    declared = typing.get_type_hints(cls)
    return tuple((f.name, declared[f.name]) for f in dataclasses.fields(cls))


def _bare_name(hint: object) -> str:
    origin = typing.get_origin(hint)
    if origin is dict:
        return "dict of JSON values"
    if origin is tuple:
        return f"tuple of {_bare_name(typing.get_args(hint)[0])}s"
    return str(getattr(hint, "__name__", hint))


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
            return f"{where} is {quoted(value)}, not {a_value_of(_bare_name(hint))}"
        item = typing.get_args(hint)[0]
        for i, element in enumerate(value):
            found = problem(element, item, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if typing.get_origin(hint) is types.UnionType:
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        inner = [h for h in options if h is not type(None)]
        if len(inner) == 1:
            return problem(value, inner[0], where)
        fits = isinstance(value, typing.cast(type, hint))
    elif hint is float:
        fits = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        fits = isinstance(value, typing.cast(type, hint))
    if not fits:
        return f"{where} is {quoted(value)}, not {a_value_of(_bare_name(hint))}"
    if dataclasses.is_dataclass(hint):
        for name, field_hint in hints(typing.cast(type, hint)):
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
    if type(value) in SCALARS or isinstance(value, str | int | float):
        return None
    return f"{where} is {quoted(value)}, which is not JSON"


def commands_problem(commands: object) -> str | None:
    """What keeps a `handle` or `recover` result from being a list of protocol commands whose
    fields have their declared types, worded after 'returned', or None."""
    if not isinstance(commands, list):
        return f"returned {quoted(commands)}, not a list of commands"
    for i, command in enumerate(commands):
        if type(command) not in COMMANDS:
            return (f"returned a list whose item {i} is {quoted(command)}, not one of the "
                    "protocol's commands")
        found = problem(command, type(command), "")
        if found is not None:
            return f"returned {a_value_of(type(command).__name__)} (item {i}) whose {found}"
    return None


def snapshot_problem(snapshot: object) -> str | None:
    """What keeps a `snapshot` result from being an AgentSnapshot of ToolCallViews and
    Messages, worded after 'returned', or None."""
    if not isinstance(snapshot, AgentSnapshot):
        return f"returned {quoted(snapshot)}, not an AgentSnapshot"
    found = problem(snapshot, AgentSnapshot, "")
    return None if found is None else f"returned an AgentSnapshot whose {found}"
