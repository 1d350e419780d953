"""Executors that step outside the protocol: each is the reference executor except for one way
of misbehaving (raising, returning the wrong type, a command or snapshot of the wrong shape).

Every layer that drives an executor must report each of these as a finding of its own, with the
exception or the wrong value and the step that caused it, and never crash on it. Each factory is
a `module:factory` path for `atmostonce verify --executor`; `BROKEN` names them all with the
words their finding must contain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from atmostonce.executor import reference
from atmostonce.spec.protocol import (
    JSON,
    Ask,
    Event,
    Executor,
    ExecutorConfig,
    Poll,
    StartTimer,
)
from atmostonce.spec.session import AgentSnapshot

MODULE = __name__


class _Broken:
    """The reference executor, with hooks a subclass overrides to misbehave."""

    def __init__(self, config: ExecutorConfig) -> None:
        self.inner = reference(config)

    def handle(self, event: Event) -> Any:
        return self.inner.handle(event)

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> Any:
        return self.inner.recover(journal, at)

    def snapshot(self, session_id: str) -> Any:
        return self.inner.snapshot(session_id)


class _RaisesOnAsk(_Broken):
    """Raises on the first Ask it is given, as an executor with a bug in its intake would."""

    def handle(self, event: Event) -> Any:
        if isinstance(event, Ask):
            raise RuntimeError("cannot take the call")
        return self.inner.handle(event)


class _ReturnsTuple(_Broken):
    """Returns its commands as a tuple, not the list the protocol asks for."""

    def handle(self, event: Event) -> Any:
        return tuple(self.inner.handle(event))


class _ReturnsNone(_Broken):
    """Returns None for a Poll instead of a list (a NoWork, or a hand-out)."""

    def handle(self, event: Event) -> Any:
        commands = self.inner.handle(event)
        return None if isinstance(event, Poll) else commands


class _ReturnsString(_Broken):
    """Adds a string to the commands an Ask returns, where only protocol Commands belong."""

    def handle(self, event: Event) -> Any:
        commands: list[Any] = self.inner.handle(event)
        return [*commands, "persist the call"] if isinstance(event, Ask) else commands


class _DelayAsText(_Broken):
    """Starts every timer with its delay as a string, not a number of seconds."""

    def handle(self, event: Event) -> Any:
        wrong: Any = replace
        return [wrong(c, delay=f"{c.delay}s") if isinstance(c, StartTimer) else c
                for c in self.inner.handle(event)]


class _RecoverRaises(_Broken):
    """Raises when it rebuilds from the journal after a restart."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> Any:
        raise KeyError(f"no table for entry {len(journal) - 1}")


class _SnapshotDict(_Broken):
    """Returns the snapshot as a plain dict, not an AgentSnapshot."""

    def snapshot(self, session_id: str) -> Any:
        inner = self.inner.snapshot(session_id)
        return {"session_id": session_id, "tool_calls": list(inner.tool_calls),
                "messages": list(inner.messages)}


class _SnapshotViewsAsDicts(_Broken):
    """Returns an AgentSnapshot whose tool calls are dicts, not ToolCallViews."""

    def snapshot(self, session_id: str) -> Any:
        inner: AgentSnapshot = self.inner.snapshot(session_id)
        views = tuple({"turn_id": v.turn_id, "status": v.status.value}
                      for v in inner.tool_calls)
        wrong: Any = replace
        return wrong(inner, tool_calls=views)


def raises_on_ask(config: ExecutorConfig) -> Executor:
    return _RaisesOnAsk(config)


def returns_tuple(config: ExecutorConfig) -> Executor:
    return _ReturnsTuple(config)


def returns_none(config: ExecutorConfig) -> Executor:
    return _ReturnsNone(config)


def returns_string(config: ExecutorConfig) -> Executor:
    return _ReturnsString(config)


def delay_as_text(config: ExecutorConfig) -> Executor:
    return _DelayAsText(config)


def recover_raises(config: ExecutorConfig) -> Executor:
    return _RecoverRaises(config)


def snapshot_dict(config: ExecutorConfig) -> Executor:
    return _SnapshotDict(config)


def snapshot_views_as_dicts(config: ExecutorConfig) -> Executor:
    return _SnapshotViewsAsDicts(config)


BROKEN: dict[str, tuple[Callable[[ExecutorConfig], Executor], tuple[str, ...]]] = {
    "raises_on_ask": (raises_on_ask, ("raised RuntimeError: cannot take the call", "Ask(")),
    "returns_tuple": (returns_tuple, ("returned a tuple", "handle(")),
    "returns_none": (returns_none, ("returned None", "Poll(")),
    "returns_string": (returns_string, ("'persist the call'", "Ask(")),
    "delay_as_text": (delay_as_text, ("StartTimer", "delay", "str")),
    "recover_raises": (recover_raises, ("recover(", "raised KeyError")),
    "snapshot_dict": (snapshot_dict, ("snapshot(", "returned a dict")),
    "snapshot_views_as_dicts": (snapshot_views_as_dicts,
                                ("snapshot(", "tool_calls[0]", "ToolCallView")),
}
"""Each broken executor's factory and the words its finding must contain: the exception or the
wrong value, and the call that produced it."""


def path(name: str) -> str:
    """The `module:factory` path of a broken executor, as `--executor` takes it."""
    return f"{MODULE}:{name}"
