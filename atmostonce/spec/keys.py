"""Idempotency keys: `{flow_id}/{turn_id}/{tool_call_id}`, the same for every attempt of a call.

Clause ids: TC-KEY-1, TC-KEY-2, TC-RCN-KEY, decision D-2.
"""

from __future__ import annotations

from dataclasses import dataclass

from atmostonce.spec.errors import SpecError

SEPARATOR = "/"
COMPONENT_NAMES = ("flow_id", "turn_id", "tool_call_id")


def component_problem(value: str) -> str | None:
    """Why `value` cannot be a key component, or None when it can (D-2).

    An empty component, a separator inside one, or white space or an unprintable character would
    make two different calls share a key, or a key impossible to split back or to quote.
    """
    if value == "":
        return "is empty"
    if SEPARATOR in value:
        return "contains '/'"
    if " " in value or not value.isprintable():
        return "contains white space or an unprintable character"
    return None


def _check(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise SpecError(f"{name} must be a string, got {type(value).__name__}")
    problem = component_problem(value)
    if problem is not None:
        raise SpecError(f"{name} {value!r} {problem}; key components must be non-empty, "
                        "printable, and free of white space and '/'")
    return value


@dataclass(frozen=True)
class IdempotencyKey:
    """The three parts of a call's idempotency key; `str()` joins them with slashes (TC-KEY-2)."""

    flow_id: str
    turn_id: str
    tool_call_id: str

    def __post_init__(self) -> None:
        for name in COMPONENT_NAMES:
            _check(name, getattr(self, name))

    def __str__(self) -> str:
        return SEPARATOR.join((self.flow_id, self.turn_id, self.tool_call_id))


def build_key(flow_id: str, turn_id: str, tool_call_id: str) -> str:
    """The idempotency key every attempt of the call passes to the service (TC-KEY-1, TC-KEY-2)."""
    return str(IdempotencyKey(flow_id, turn_id, tool_call_id))


def parse_key(key: object) -> IdempotencyKey:
    """Split a key back into its parts, as reconcile does (TC-RCN-KEY); SpecError if malformed."""
    if not isinstance(key, str):
        raise SpecError(f"idempotency key must be a string, got {type(key).__name__}")
    parts = key.split(SEPARATOR)
    if len(parts) != 3:
        raise SpecError(
            f"malformed idempotency key {key!r}: expected flow_id/turn_id/tool_call_id, "
            f"got {len(parts)} part(s)"
        )
    return IdempotencyKey(parts[0], parts[1], parts[2])
