"""Reading the journal back: each entry checked field by field and turned into the fact it states
(`facts`), for `recovery` to fold; every problem is a one-line SpecError naming the entry.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from typing import NoReturn, TypeVar

from atmostonce.executor.facts import (
    Answered,
    Asked,
    Ended,
    Fact,
    Handed,
    PolicySet,
    Queued,
    Recorded,
    RunOver,
    SessionOpened,
    UserMessageAdded,
    WorkerLost,
)
from atmostonce.executor.journal import EntryType
from atmostonce.executor.keys import call_key
from atmostonce.executor.state import attempt_id
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
    PolicySource,
    ToolHints,
    ToolPolicy,
    deadline_problem,
)
from atmostonce.spec.protocol import JSON
from atmostonce.spec.records import AttemptEnd, FailureKind, Outcome, Record

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)

# D-7: the approval states an accepted answer or the deadline can lead to.
ANSWERED_STATES = (ApprovalState.APPROVED, ApprovalState.REJECTED, ApprovalState.EXPIRED)


class _Reader:
    """Typed access to one entry's fields; every problem becomes a one-line SpecError."""

    __slots__ = ("entry", "index", "kind")

    def __init__(self, index: int, entry: Mapping[str, JSON], kind: str) -> None:
        self.index = index
        self.entry = entry
        self.kind = kind

    def error(self, problem: str) -> SpecError:
        return SpecError(f"journal entry {self.index} ({self.kind}): {problem}")

    def fail(self, problem: str) -> NoReturn:
        raise self.error(problem)

    def _get(self, name: str) -> JSON:
        value = self.entry.get(name, _MISSING)
        if value is _MISSING:
            self.fail(f"missing field {name!r}")
        return value  # type: ignore[return-value]

    # Each reader looks its field up once and checks the common, well-formed case first; a
    # recovery reads every entry of the journal.

    def text(self, name: str) -> str:
        value = self.entry.get(name, _MISSING)
        if isinstance(value, str):
            return value
        if value is _MISSING:
            self.fail(f"missing field {name!r}")
        raise self.error(f"field {name!r} must be a string, got {_type(value)}")

    def name(self, name: str) -> str:
        value = self.text(name)
        if not value:
            self.fail(f"field {name!r} must not be empty")
        return value

    def flag(self, name: str) -> bool:
        value = self._get(name)
        if not isinstance(value, bool):
            self.fail(f"field {name!r} must be true or false, got {_type(value)}")
        return value

    def optional_flag(self, name: str) -> bool | None:
        value = self._get(name)
        if value is not None and not isinstance(value, bool):
            self.fail(f"field {name!r} must be true, false or null, got {_type(value)}")
        return value

    def time(self) -> float:
        value = self._get("at")
        if isinstance(value, bool) or not isinstance(value, _NUMBERS) or not math.isfinite(
                value):
            self.fail(f"field 'at' must be a finite number, got {value!r}")
        return float(value)

    def optional_deadline(self) -> float | None:
        """The entry's approval deadline (D-32); absent or null in older journals."""
        value = self.entry.get("approval_deadline")
        problem = deadline_problem(value)
        if problem is not None:
            self.fail(f"field 'approval_deadline' {problem}")
        return None if value is None else float(value)  # type: ignore[arg-type]

    def number(self) -> int:
        value = self._get("number")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail(f"field 'number' must be a whole number >= 1, got {value!r}")
        return value

    def effect(self, name: str) -> EffectClass | None:
        value = self._get(name)
        if value is None:
            return None
        if isinstance(value, str):
            found = _members(EffectClass).get(value)
            if found is not None:
                return found
        return self.parsed(EffectClass.parse, value, name)

    def parsed(self, parse: Callable[[object], T], value: object, name: str) -> T:
        try:
            return parse(value)
        except SpecError as error:
            self.fail(f"field {name!r}: {error}")

    def enum(self, name: str, cls: type[E]) -> E:
        value = self._get(name)
        if isinstance(value, _SCALARS):
            member = _members(cls).get(value)
            if member is not None:
                return member
        known = ", ".join(str(m.value) for m in cls)
        raise self.error(f"field {name!r} is {value!r}, not one of: {known}")

    def attempt(self, key: str, number: int) -> str:
        value = self.name("attempt")
        if value != attempt_id(key, number):
            self.fail(f"attempt {value!r} is not attempt {number} of {key!r}")
        return value


_MISSING = object()
_NUMBERS = (int, float)
_SCALARS = (str, int, float, bool)
"""The JSON values an enum member's value can equal."""
_MEMBERS: dict[type[enum.Enum], dict[object, enum.Enum]] = {}


def _members(cls: type[E]) -> dict[object, E]:
    """An enum's members by value, for the scalar values JSON holds: a lookup finds the member
    that equals the value, as comparing with each would."""
    found = _MEMBERS.get(cls)
    if found is None:
        found = _MEMBERS[cls] = {m.value: m for m in cls}
    return found  # type: ignore[return-value]


def _type(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _policy(r: _Reader) -> PolicySet:
    effect = r.effect("effect")
    requires = r.optional_flag("requires_approval")
    if effect is None and requires is not None:
        r.fail("requires_approval is set but the effect is null")
    deadline = r.optional_deadline()
    if effect is None and deadline is not None:
        r.fail("approval_deadline is set but the effect is null")
    policy = ToolPolicy(effect, requires, deadline) if effect is not None else None
    hints_value = r.entry.get("hints")
    hints = None
    if hints_value is not None:
        if not isinstance(hints_value, dict):
            r.fail(f"field 'hints' must be an object or null, got {_type(hints_value)}")
        inner = _Reader(r.index, hints_value, f"{r.kind} hints")
        hints = ToolHints(inner.optional_flag("read_only"), inner.optional_flag("idempotent"),
                          inner.optional_flag("destructive"))
    return PolicySet(r.time(), r.name("tool"), policy, hints)


def _session(r: _Reader) -> SessionOpened:
    lowers = r.entry.get("hints_may_lower", True)
    if not isinstance(lowers, bool):
        r.fail(f"field 'hints_may_lower' must be true or false, got {_type(lowers)}")
    return SessionOpened(r.time(), r.name("session_id"), r.effect("default_effect"), lowers)


def _ask(r: _Reader) -> Asked:
    key = r.name("key")
    session_id, turn_id, call_id = r.text("session_id"), r.text("turn_id"), r.text("tool_call_id")
    try:
        built = call_key(session_id, turn_id, call_id)
    except SpecError as error:
        r.fail(str(error))
    if built != key:
        r.fail(f"key {key!r} is not the key of its call, {built!r}")
    effect = r.effect("effect")
    if effect is None:
        r.fail("field 'effect' must not be null")
    policy = _policy_kept(effect, r.flag("requires_approval"), r.enum("source", PolicySource))
    return Asked(r.time(), key, session_id, turn_id, call_id, r.name("tool"),
                 r.text("arguments"), policy, r.optional_deadline())


_KEPT: dict[tuple[str, bool, str], EffectivePolicy] = {}


def _policy_kept(effect: EffectClass, requires_approval: bool,
                 source: PolicySource) -> EffectivePolicy:
    """The effective policy an ask entry records; equal ones are one value, shared."""
    slot = (effect._value_, requires_approval, source._value_)
    found = _KEPT.get(slot)
    if found is None:
        found = _KEPT[slot] = EffectivePolicy(effect, requires_approval, source)
    return found


def _approval(r: _Reader) -> Answered:
    state = r.enum("state", ApprovalState)
    if state not in ANSWERED_STATES:
        r.fail(f"state {state.value!r} is not an answered approval state")
    return Answered(r.time(), r.name("key"), state)


def _queued(r: _Reader) -> Queued:
    key, number = r.name("key"), r.number()
    return Queued(r.time(), key, r.attempt(key, number), number)


def _handed(r: _Reader) -> Handed:
    key, number = r.name("key"), r.number()
    return Handed(r.time(), key, r.attempt(key, number), number, r.name("worker"))


def _ended(r: _Reader) -> Ended:
    key, number = r.name("key"), r.number()
    return Ended(r.time(), key, r.attempt(key, number), number, r.enum("end", AttemptEnd),
                 r.flag("may_still_run"), r.text("output"))


def _record(r: _Reader) -> Recorded:
    record = r.enum("record", Record)
    failure_value = r.entry.get("failure")
    failure = None if failure_value is None else r.enum("failure", FailureKind)
    if (failure is not None) != (record is Record.FAILED):
        r.fail("field 'failure' must be set exactly when the record is failed")
    outcome = Outcome(record, r.text("error"), failure)
    return Recorded(r.time(), r.name("key"), outcome, r.text("output"))


def _user_message(r: _Reader) -> UserMessageAdded:
    return UserMessageAdded(r.time(), r.name("session_id"), r.text("text"))


def _run_over(r: _Reader) -> RunOver:
    return RunOver(r.time(), r.name("attempt"), r.name("worker"))


def _worker_lost(r: _Reader) -> WorkerLost:
    return WorkerLost(r.time(), r.name("worker"))


_READERS: Mapping[str, Callable[[_Reader], Fact]] = {
    EntryType.POLICY.value: _policy,
    EntryType.SESSION.value: _session,
    EntryType.ASK.value: _ask,
    EntryType.APPROVAL.value: _approval,
    EntryType.QUEUED.value: _queued,
    EntryType.HANDED.value: _handed,
    EntryType.ENDED.value: _ended,
    EntryType.RECORD.value: _record,
    EntryType.USER_MESSAGE.value: _user_message,
    EntryType.RUN_OVER.value: _run_over,
    EntryType.WORKER_LOST.value: _worker_lost,
}


def read_entry(index: int, entry: object) -> Fact:
    """The fact journal entry number `index` states; SpecError naming the entry if malformed."""
    if not isinstance(entry, dict):
        raise SpecError(f"journal entry {index}: must be a JSON object, got {_type(entry)}")
    kind = entry.get("type")
    if not isinstance(kind, str) or kind not in _READERS:
        known = ", ".join(_READERS)
        raise SpecError(f"journal entry {index}: unknown type {kind!r} (known: {known})")
    return _READERS[kind](_Reader(index, entry, kind))
