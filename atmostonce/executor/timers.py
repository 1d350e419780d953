"""Timer ids: `{kind}:{subject}`, one timer per kind and subject, so starting it again restarts
it and a fired id names what it is about without any table of its own."""

from __future__ import annotations

from collections.abc import Mapping

from atmostonce.spec.protocol import TimerKind

_KIND_BY_VALUE: Mapping[str, TimerKind] = {kind.value: kind for kind in TimerKind}
_PREFIX: Mapping[TimerKind, str] = {kind: f"{kind.value}:" for kind in TimerKind}


def timer_id(kind: TimerKind, subject: str) -> str:
    return _PREFIX[kind] + subject


def prefix(kind: TimerKind) -> str:
    """The part of a timer id before its subject; `prefix(kind) + subject` is the id."""
    return _PREFIX[kind]


def parse_timer(timer: str) -> tuple[TimerKind, str] | None:
    """The kind and subject of a timer id, or None for an id this executor never made."""
    name, sep, subject = timer.partition(":")
    kind = _KIND_BY_VALUE.get(name)
    if kind is None or not sep:
        return None
    return kind, subject

