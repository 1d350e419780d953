"""The session API's shapes as JSON on the wire, and typed reading of message fields.

Encoding and decoding are exact inverses, so a client gets back the very `AgentSnapshot` and
`ToolCallFinished` values the executor produced, each call with the policy and deadline it kept
and its attempt history (TC-RCN-FIND, TC-SNAP-1, D-30, D-32). Reading a field that is missing
or of the wrong type raises a one-line SpecError naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy, deadline_problem
from atmostonce.spec.records import AttemptEnd, AttemptProgress
from atmostonce.spec.session import (
    AgentSnapshot,
    AttemptView,
    Message,
    MessageRole,
    ToolCallFinished,
    ToolCallStatus,
    ToolCallView,
)

Obj = dict[str, Any]


# -- fields ------------------------------------------------------------------------------------


def text(message: Mapping[str, Any], name: str, *, empty: bool = True) -> str:
    value = message.get(name)
    if not isinstance(value, str) or (not empty and not value):
        raise SpecError(f"field {name!r} must be a{'' if empty else ' non-empty'} string, "
                        f"got {value!r}")
    return value


def flag(message: Mapping[str, Any], name: str, default: bool | None = None) -> bool:
    value = message.get(name, default)
    if not isinstance(value, bool):
        raise SpecError(f"field {name!r} must be true or false, got {value!r}")
    return value


def optional_flag(message: Mapping[str, Any], name: str) -> bool | None:
    value = message.get(name)
    if value is not None and not isinstance(value, bool):
        raise SpecError(f"field {name!r} must be true, false or null, got {value!r}")
    return value


def texts(message: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = message.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError(f"field {name!r} must be a list of strings, got {value!r}")
    return tuple(value)


def effect(message: Mapping[str, Any], name: str) -> EffectClass | None:
    value = message.get(name)
    return None if value is None else EffectClass.parse(value)


# -- policies ----------------------------------------------------------------------------------


def policy_json(policy: ToolPolicy | None) -> Obj | None:
    if policy is None:
        return None
    return {"effect": policy.effect.value, "requires_approval": policy.requires_approval,
            "approval_deadline": policy.approval_deadline}


def policy_of(value: object) -> ToolPolicy | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SpecError(f"policy must be an object or null, got {value!r}")
    return ToolPolicy.of(value.get("effect"), value.get("requires_approval"),
                         value.get("approval_deadline"))


def deadline(message: Mapping[str, Any], name: str) -> float | None:
    """An optional approval deadline in seconds (D-32)."""
    value = message.get(name)
    problem = deadline_problem(value)
    if problem is not None:
        raise SpecError(f"field {name!r} {problem}")
    return None if value is None else float(value)


def optional_time(value: Mapping[str, Any], name: str) -> float | None:
    found = value.get(name)
    if found is not None and (isinstance(found, bool) or not isinstance(found, int | float)):
        raise SpecError(f"field {name!r} must be a number or null, got {found!r}")
    return None if found is None else float(found)


def hints_json(hints: ToolHints | None) -> Obj | None:
    if hints is None:
        return None
    return {"read_only": hints.read_only, "idempotent": hints.idempotent,
            "destructive": hints.destructive}


def hints_of(value: object) -> ToolHints | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SpecError(f"hints must be an object or null, got {value!r}")
    return ToolHints(optional_flag(value, "read_only"), optional_flag(value, "idempotent"),
                     optional_flag(value, "destructive"))


# -- the session API ---------------------------------------------------------------------------


def finished_json(event: ToolCallFinished) -> Obj:
    return {"kind": event.kind, "session_id": event.session_id, "turn_id": event.turn_id,
            "tool_call_id": event.tool_call_id, "status": event.status.value,
            "error": event.error}


def finished_of(value: Mapping[str, Any]) -> ToolCallFinished:
    return ToolCallFinished(text(value, "session_id"), text(value, "turn_id"),
                            text(value, "tool_call_id"), ToolCallStatus(value.get("status")),
                            text(value, "error"))


def attempt_json(a: AttemptView) -> Obj:
    return {"number": a.number, "queued_at": a.queued_at, "worker": a.worker,
            "handed_at": a.handed_at, "started_at": a.started_at, "ended_at": a.ended_at,
            "end": a.end.value if a.end is not None else None,
            "progress": a.progress.value if a.progress is not None else None}


def attempt_of(value: Mapping[str, Any]) -> AttemptView:
    number = value.get("number")
    if isinstance(number, bool) or not isinstance(number, int):
        raise SpecError(f"field 'number' must be a whole number, got {number!r}")
    queued = optional_time(value, "queued_at")
    if queued is None:
        raise SpecError("field 'queued_at' must be a number, got None")
    end = value.get("end")
    progress = value.get("progress")
    return AttemptView(number, queued, text(value, "worker"), optional_time(value, "handed_at"),
                       optional_time(value, "started_at"), optional_time(value, "ended_at"),
                       None if end is None else AttemptEnd(end),
                       None if progress is None else AttemptProgress(progress))


def call_json(c: ToolCallView) -> Obj:
    return {"turn_id": c.turn_id, "tool_call_id": c.tool_call_id, "tool": c.tool,
            "status": c.status.value, "error": c.error, "idempotency_key": c.idempotency_key,
            "effect": c.effect.value if c.effect is not None else None,
            "requires_approval": c.requires_approval, "approval_deadline": c.approval_deadline,
            "attempts": [attempt_json(a) for a in c.attempts], "history": c.history}


def call_of(c: Mapping[str, Any]) -> ToolCallView:
    attempts = c.get("attempts", [])
    if not isinstance(attempts, list) or not all(isinstance(a, dict) for a in attempts):
        raise SpecError(f"field 'attempts' must be a list of objects, got {attempts!r}")
    return ToolCallView(text(c, "turn_id"), text(c, "tool_call_id"), text(c, "tool"),
                        ToolCallStatus(c.get("status")), text(c, "error"),
                        text(c, "idempotency_key"), effect(c, "effect"),
                        optional_flag(c, "requires_approval"), deadline(c, "approval_deadline"),
                        tuple(attempt_of(a) for a in attempts), flag(c, "history", False))


def snapshot_json(snapshot: AgentSnapshot) -> Obj:
    return {
        "session_id": snapshot.session_id,
        "tool_calls": [call_json(c) for c in snapshot.tool_calls],
        "messages": [
            {"role": m.role.value, "text": m.text, "turn_id": m.turn_id,
             "tool_call_id": m.tool_call_id, "tool_output": m.tool_output,
             "tool_arguments": m.tool_arguments}
            for m in snapshot.messages],
    }


def snapshot_of(value: Mapping[str, Any]) -> AgentSnapshot:
    calls = tuple(call_of(c) for c in value.get("tool_calls", []))
    messages = tuple(
        Message(MessageRole(m.get("role")), text(m, "text"), text(m, "turn_id"),
                text(m, "tool_call_id"), text(m, "tool_output"), text(m, "tool_arguments"))
        for m in value.get("messages", []))
    return AgentSnapshot(text(value, "session_id"), calls, messages)


def recorded_events(snapshot: AgentSnapshot) -> list[ToolCallFinished]:
    """The finished events of every call the snapshot shows with its record, in ask order."""
    return [ToolCallFinished(snapshot.session_id, c.turn_id, c.tool_call_id, c.status, c.error)
            for c in snapshot.tool_calls if c.status.final]
