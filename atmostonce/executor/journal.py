"""The journal's entries: what the executor persists, as self-describing JSON, and how `recover`
reads them back.

Every entry is a JSON object with a `type` and the data of one durable fact, so recovery is a
pure fold over them. The facts: a tool's policy and a session's default (so later asks resolve
the same way after a restart), a call with the policy it keeps from ask time (TC-SNAP-1), an
accepted approval answer or deadline (D-7), an attempt queued, handed to a worker (before its
go-ahead, D-5) and ended, a call's record (TC-REC-1), a user message (TC-RCN-TELL), and the end
of runs the executor had given up on (TC-AMO-3, D-6, D-12).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from typing import NamedTuple, NoReturn, TypeVar

from atmostonce.executor.keys import call_key
from atmostonce.executor.state import Attempt, attempt_id
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
    PolicySource,
    ToolHints,
    ToolPolicy,
)
from atmostonce.spec.protocol import JSON
from atmostonce.spec.records import AttemptEnd, FailureKind, Outcome, Record

Entry = dict[str, JSON]
T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)


class EntryType(enum.Enum):
    POLICY = "policy"
    SESSION = "session"
    ASK = "ask"
    APPROVAL = "approval"
    QUEUED = "queued"
    HANDED = "handed"
    ENDED = "ended"
    RECORD = "record"
    USER_MESSAGE = "user_message"
    RUN_OVER = "run_over"
    WORKER_LOST = "worker_lost"


# D-7: the approval states an accepted answer or the deadline can lead to.
ANSWERED_STATES = (ApprovalState.APPROVED, ApprovalState.REJECTED, ApprovalState.EXPIRED)


# -- writing ----------------------------------------------------------------------------------
# An enum member's JSON name is its `_value_`, read directly: entries are written on every step.


def policy_entry(at: float, tool: str, policy: ToolPolicy | None,
                 hints: ToolHints | None) -> Entry:
    hints_json: JSON = None
    if hints is not None:
        hints_json = {"read_only": hints.read_only, "idempotent": hints.idempotent,
                      "destructive": hints.destructive}
    return {
        "type": "policy", "at": at, "tool": tool,
        "effect": policy.effect._value_ if policy is not None else None,
        "requires_approval": policy.requires_approval if policy is not None else None,
        "hints": hints_json,
    }


def session_entry(at: float, session_id: str, default_effect: EffectClass | None) -> Entry:
    return {"type": "session", "at": at, "session_id": session_id,
            "default_effect": default_effect._value_ if default_effect is not None else None}


def ask_entry(at: float, key: str, session_id: str, turn_id: str, tool_call_id: str, tool: str,
              arguments: str, policy: EffectivePolicy) -> Entry:
    """A call and the effective policy it keeps from now on (TC-SNAP-1)."""
    return {
        "type": "ask", "at": at, "key": key, "session_id": session_id, "turn_id": turn_id,
        "tool_call_id": tool_call_id, "tool": tool, "arguments": arguments,
        "effect": policy.effect._value_, "requires_approval": policy.requires_approval,
        "source": policy.source._value_,
    }


def approval_entry(at: float, key: str, state: ApprovalState) -> Entry:
    return {"type": "approval", "at": at, "key": key, "state": state._value_}


def queued_entry(at: float, attempt: Attempt) -> Entry:
    return {"type": "queued", "at": at, "key": attempt.call.key, "attempt": attempt.id,
            "number": attempt.number}


def handed_entry(at: float, attempt: Attempt, worker: str) -> Entry:
    """The attempt is handed to `worker`: written before the go-ahead (D-5)."""
    return {"type": "handed", "at": at, "key": attempt.call.key, "attempt": attempt.id,
            "number": attempt.number, "worker": worker}


def ended_entry(at: float, attempt: Attempt, end: AttemptEnd, may_still_run: bool,
                output: str) -> Entry:
    """The attempt ended; `may_still_run` says its run may go on at its worker (TC-AMO-3)."""
    return {"type": "ended", "at": at, "key": attempt.call.key, "attempt": attempt.id,
            "number": attempt.number, "end": end._value_, "may_still_run": may_still_run,
            "output": output}


def record_entry(at: float, key: str, outcome: Outcome, output: str) -> Entry:
    return {"type": "record", "at": at, "key": key, "record": outcome.record._value_,
            "error": outcome.error,
            "failure": outcome.failure._value_ if outcome.failure is not None else None,
            "output": output}


def user_message_entry(at: float, session_id: str, text: str) -> Entry:
    return {"type": "user_message", "at": at, "session_id": session_id, "text": text}


def run_over_entry(at: float, attempt: str, worker: str) -> Entry:
    return {"type": "run_over", "at": at, "attempt": attempt, "worker": worker}


def worker_lost_entry(at: float, worker: str) -> Entry:
    """The worker was declared lost, so its abandoned runs are over (D-12)."""
    return {"type": "worker_lost", "at": at, "worker": worker}


# -- reading ----------------------------------------------------------------------------------
# Facts are named tuples: immutable, and cheap to make once per entry of every recovery.


class PolicySet(NamedTuple):
    at: float
    tool: str
    policy: ToolPolicy | None
    hints: ToolHints | None


class SessionOpened(NamedTuple):
    at: float
    session_id: str
    default_effect: EffectClass | None


class Asked(NamedTuple):
    at: float
    key: str
    session_id: str
    turn_id: str
    tool_call_id: str
    tool: str
    arguments: str
    policy: EffectivePolicy


class Answered(NamedTuple):
    at: float
    key: str
    state: ApprovalState


class Queued(NamedTuple):
    at: float
    key: str
    attempt: str
    number: int


class Handed(NamedTuple):
    at: float
    key: str
    attempt: str
    number: int
    worker: str


class Ended(NamedTuple):
    at: float
    key: str
    attempt: str
    number: int
    end: AttemptEnd
    may_still_run: bool
    output: str


class Recorded(NamedTuple):
    at: float
    key: str
    outcome: Outcome
    output: str


class UserMessageAdded(NamedTuple):
    at: float
    session_id: str
    text: str


class RunOver(NamedTuple):
    at: float
    attempt: str
    worker: str


class WorkerLost(NamedTuple):
    at: float
    worker: str


Fact = (PolicySet | SessionOpened | Asked | Answered | Queued | Handed | Ended | Recorded
        | UserMessageAdded | RunOver | WorkerLost)


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
        return self.parsed(EffectClass.parse, value)

    def parsed(self, parse: Callable[[object], T], value: object) -> T:
        try:
            return parse(value)
        except SpecError as error:
            self.fail(str(error))

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
    policy = ToolPolicy(effect, requires) if effect is not None else None
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
    return SessionOpened(r.time(), r.name("session_id"), r.effect("default_effect"))


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
                 r.text("arguments"), policy)


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
