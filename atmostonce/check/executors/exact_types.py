"""The fast check of what an executor under test answers: Python code, written from the
declared field types of the protocol's dataclasses and compiled, that tests a value and every
field in it for exactly its declared type with straight-line `type(...) is` tests. It runs on
every result the simulator carries out, so only when it fails does
`atmostonce.check.executors.guard` run the precise check
(`atmostonce.check.executors.type_problems`), which accepts subclasses and words the problem.
`json_ok` is the same fast test of a journal entry's JSON.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from atmostonce.check.executors.type_problems import SCALARS, hints
from atmostonce.spec import protocol as p

Handle = Callable[[p.Event], list[p.Command]]


class Compiler:
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
        if origin is types.UnionType:
            return "(" + " or ".join(f"{var} is None" if arg is type(None) else
                                     self.test(arg, var) for arg in typing.get_args(hint)) + ")"
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
        plain = [self.test(h, f"{var}.{n}") for n, h in hints(cls) if not _nested(h)]
        lines = [f"{indent}if not ({' and '.join(plain)}):", f"{indent}    {fail}"] \
            if plain else []
        for name, hint in hints(cls):
            if _nested(hint):
                lines += self.check(hint, f"{var}.{name}", indent, fail)
        return lines

    def compile(self, source: list[str], name: str) -> Any:
        space = dict(self.names)
        exec("\n".join(source), space)
        return space[name]

    def handler(self, classes: Sequence[type[p.Command]],
                breach: Callable[[str, BaseException], Exception],
                check: Callable[[object, Callable[[Any], str], object], None],
                call: Callable[[p.Event], str]) -> Callable[[Handle], Handle]:
        """A function that wraps an executor's `handle` into one that raises
        `breach(call(event), error)` for what the executor raises, returns a list of commands
        each of exactly one of `classes` with every field of its declared type at once, and
        leaves anything else to `check(commands, call, event)`, the precise check."""
        self.names.update(_breach=breach, _check=check, _handle_call=call)
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


def _nested(hint: object) -> bool:
    """Whether a field's type needs more than a test of its own type."""
    return typing.get_origin(hint) is tuple or dataclasses.is_dataclass(hint)


def json_ok(value: dict[Any, Any]) -> bool:
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
        return json_ok(item)
    if type(item) is list:
        return all(type(element) in SCALARS or _json_nested_ok(element) for element in item)
    return False
