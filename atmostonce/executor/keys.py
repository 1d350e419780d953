"""The idempotency key of a call, as `atmostonce.spec.keys.build_key` makes it, made once per ask
and once per ask entry of every recovery."""

from __future__ import annotations

from atmostonce.spec.keys import SEPARATOR, build_key, component_problem


def call_key(session_id: str, turn_id: str, tool_call_id: str) -> str:
    """The call's idempotency key, `build_key`'s (TC-KEY-2): components that pass the spec's
    `component_problem` are joined as `build_key` joins them, without building an
    `IdempotencyKey`; anything else goes to `build_key` itself, which raises its SpecError
    (D-2)."""
    for part in (session_id, turn_id, tool_call_id):
        if not isinstance(part, str) or component_problem(part) is not None:
            return build_key(session_id, turn_id, tool_call_id)
    return SEPARATOR.join((session_id, turn_id, tool_call_id))
