"""The executor protocol's values as JSON: events, commands, the configuration and the snapshot
of `atmostonce.spec.protocol` and `atmostonce.spec.session`, to and from plain JSON values.

The pipe protocol (`docs/executor-protocol.md`) sends them as JSON lines, so an executor in any
language can be checked. An event or a command is an object whose `"type"` is its class name and
whose other members are its fields, under their Python names; enums travel as their values,
tuples as arrays, nested dataclasses as objects without a `"type"`. Decoding is strict: an
unknown type or field, a missing field without a default, or a value of the wrong JSON type is
a `WireError` naming where, so a child that writes something else is told from one that
disagrees.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import types
import typing
from collections.abc import Callable
from typing import Any

from atmostonce.spec import protocol as p
from atmostonce.spec.session import AgentSnapshot

PROTOCOL_VERSION = 1
"""The version of the pipe protocol this package speaks; the handshake names it."""

EVENTS: dict[str, type[p.Event]] = {
    cls.__name__: cls for cls in p.Event.__subclasses__() if cls.__module__ == p.__name__}
COMMANDS: dict[str, type[p.Command]] = {
    cls.__name__: cls for cls in p.Command.__subclasses__() if cls.__module__ == p.__name__}


class WireError(ValueError):
    """A JSON value that is not the protocol value it should be; the message says where."""


Decode = Callable[[object, str], Any]
Encode = Callable[[Any], object]


def _field_types(cls: type) -> tuple[tuple[str, object, bool, object], ...]:
    declared = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            rows.append((f.name, declared[f.name], True, f.default))
        else:
            rows.append((f.name, declared[f.name], False, None))
    return tuple(rows)


def _wrong(value: object, what: str, where: str) -> WireError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
    return WireError(f"{where} should be {what}, got {shown}")


def _str(value: object, where: str) -> str:
    if type(value) is not str:
        raise _wrong(value, "a string", where)
    return value


def _float(value: object, where: str) -> float:
    kind = type(value)
    if kind is float:
        return typing.cast(float, value)
    if kind is int:
        return float(typing.cast(int, value))
    raise _wrong(value, "a number", where)


def _int(value: object, where: str) -> int:
    if type(value) is not int:
        raise _wrong(value, "a whole number", where)
    return value


def _bool(value: object, where: str) -> bool:
    if type(value) is not bool:
        raise _wrong(value, "true or false", where)
    return value


def _json_object(value: object, where: str) -> dict[str, p.JSON]:
    if type(value) is not dict:
        raise _wrong(value, "an object", where)
    return value


_SCALARS: dict[object, Decode] = {str: _str, float: _float, int: _int, bool: _bool}


@functools.cache
def _decoder(hint: object) -> Decode:
    """The decoder of a value of the declared type `hint`."""
    if hint in _SCALARS:
        return _SCALARS[hint]
    origin = typing.get_origin(hint)
    if origin is dict:
        return _json_object
    if origin is tuple:
        item = _decoder(typing.get_args(hint)[0])

        def decode_tuple(value: object, where: str) -> tuple[object, ...]:
            if type(value) is not list:
                raise _wrong(value, "an array", where)
            return tuple(item(v, f"{where}[{i}]") for i, v in enumerate(value))
        return decode_tuple
    if origin is types.UnionType:
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        decode_inner = _decoder(inner[0])

        def decode_optional(value: object, where: str) -> object:
            return None if value is None else decode_inner(value, where)
        return decode_optional
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        members = {m.value: m for m in hint}
        name = hint.__name__

        def decode_enum(value: object, where: str) -> object:
            try:
                return members[value]
            except (KeyError, TypeError):
                raise _wrong(value, f"one of {name}'s values {sorted(members)}", where) from None
        return decode_enum
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _object_decoder(hint, tagged=False)
    raise TypeError(f"no JSON decoder for {hint!r}")


@functools.cache
def _object_decoder(cls: type, tagged: bool) -> Decode:
    """The decoder of a `cls` object; `tagged` ones carry a `"type"` member, checked
    elsewhere."""
    rows = [(name, _decoder(hint), has_default, default)
            for name, hint, has_default, default in _field_types(cls)]
    known = {name for name, *_ in rows} | ({"type"} if tagged else set())
    label = cls.__name__

    def decode(value: object, where: str) -> object:
        if type(value) is not dict:
            raise _wrong(value, f"a {label} object", where)
        fields: dict[str, object] = {}
        for name, decode_field, has_default, default in rows:
            if name in value:
                fields[name] = decode_field(value[name], f"{where}.{name}")
            elif has_default:
                fields[name] = default
            else:
                raise WireError(f"{where} ({label}) has no {name!r}")
        if len(value) > len(fields) + tagged:
            extra = sorted(set(value) - known)
            if extra:
                raise WireError(f"{where} ({label}) has unknown members {extra}")
        return cls(**fields)
    return decode


def _tagged(classes: dict[str, type], what: str, value: object, where: str) -> Any:
    if type(value) is not dict:
        raise _wrong(value, f"{what} object", where)
    name = value.get("type")
    cls = classes.get(name) if type(name) is str else None
    if cls is None:
        raise WireError(f"{where} has type {name!r}, which is no {what} "
                        f"(known: {', '.join(classes)})")
    return _object_decoder(cls, tagged=True)(value, where)


def decode_event(value: object, where: str = "event") -> p.Event:
    event: p.Event = _tagged(EVENTS, "event", value, where)
    return event


def decode_command(value: object, where: str = "command") -> p.Command:
    command: p.Command = _tagged(COMMANDS, "command", value, where)
    return command


def decode_commands(value: object, where: str = "commands") -> list[p.Command]:
    if type(value) is not list:
        raise _wrong(value, "an array of commands", where)
    return [decode_command(c, f"{where}[{i}]") for i, c in enumerate(value)]


def decode_seconds(value: object, where: str) -> float:
    return _float(value, where)


def decode_config(value: object, where: str = "config") -> p.ExecutorConfig:
    config: p.ExecutorConfig = _decoder(p.ExecutorConfig)(value, where)
    return config


def decode_snapshot(value: object, where: str = "snapshot") -> AgentSnapshot:
    snapshot: AgentSnapshot = _decoder(AgentSnapshot)(value, where)
    return snapshot


def _plain(value: Any) -> object:
    """A value of a type other than the declared one, as it goes on the wire: JSON's own types
    as they are (so the executor sees, and must refuse, the wrong type), anything else as its
    text."""
    if value is None or type(value) in (str, int, bool, list, dict):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else repr(value)
    return repr(value)


def _float_out(value: Any) -> object:
    if type(value) is float:
        return value if math.isfinite(value) else repr(value)
    return float(value) if type(value) is int else _plain(value)


def _enum_out(value: Any) -> object:
    return value.value if isinstance(value, enum.Enum) else _plain(value)


@functools.cache
def _encoder(hint: object) -> Encode:
    """The encoder of a value of the declared type `hint` (None passes through)."""
    if hint is float:
        return _float_out
    if hint in _SCALARS or typing.get_origin(hint) is dict:
        return _plain
    origin = typing.get_origin(hint)
    if origin is tuple:
        item = _encoder(typing.get_args(hint)[0])
        return lambda value: [item(v) for v in value] if type(value) in (tuple, list) \
            else _plain(value)
    if origin is types.UnionType:
        inner = _encoder(next(a for a in typing.get_args(hint) if a is not type(None)))
        return lambda value: None if value is None else inner(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_out
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        encode_object = _object_encoder(hint, tagged=False)
        return lambda value: encode_object(value) if type(value) is hint else _plain(value)
    raise TypeError(f"no JSON encoder for {hint!r}")


@functools.cache
def _object_encoder(cls: type, tagged: bool) -> Encode:
    rows = [(name, _encoder(hint)) for name, hint, *_ in _field_types(cls)]
    name_of = cls.__name__

    def encode(value: Any) -> object:
        out: dict[str, object] = {"type": name_of} if tagged else {}
        for name, encode_field in rows:
            out[name] = encode_field(getattr(value, name))
        return out
    return encode


def encode_event(event: p.Event) -> object:
    kind: type = type(event)
    return _object_encoder(kind, tagged=True)(event)


def encode_command(command: p.Command) -> object:
    kind: type = type(command)
    return _object_encoder(kind, tagged=True)(command)


def encode_commands(commands: list[p.Command]) -> object:
    return [encode_command(c) for c in commands]


def encode_config(config: p.ExecutorConfig) -> object:
    return _encoder(p.ExecutorConfig)(config)


def encode_snapshot(snapshot: AgentSnapshot) -> object:
    return _encoder(AgentSnapshot)(snapshot)
