"""What travels through Restate as JSON: tool policy statements, the harness's options, and the
session's snapshot and events; and their conversion to and from the spec's types."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import ToolHints, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import (
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallFinished,
    ToolCallStatus,
    ToolCallView,
)

Json = dict[str, Any]


def statement_of(policy: ToolPolicy | None, hints: ToolHints | None) -> Json:
    """A tool's policy and framework hints as the registry keeps them."""
    return {"effect": policy.effect.value if policy is not None else None,
            "requires_approval": policy.requires_approval if policy is not None else None,
            "hints": None if hints is None else {"read_only": hints.read_only,
                                                 "idempotent": hints.idempotent,
                                                 "destructive": hints.destructive}}


def policy_of(statement: Json) -> tuple[ToolPolicy | None, ToolHints | None]:
    """The policy and hints a statement holds; SpecError for a malformed one."""
    effect = statement.get("effect")
    policy = (ToolPolicy.of(effect, statement.get("requires_approval"))
              if effect is not None else None)
    given = statement.get("hints")
    hints = (ToolHints(given.get("read_only"), given.get("idempotent"), given.get("destructive"))
             if isinstance(given, dict) else None)
    return policy, hints


def settings_of(config: ExecutorConfig) -> Json:
    return asdict(config)


def config_of(settings: Json) -> ExecutorConfig:
    return ExecutorConfig(**settings)


def snapshot_of(view: Json) -> AgentSnapshot:
    """The spec's snapshot from the session's answer; SpecError for a status or role that is
    none of the spec's."""
    try:
        calls = tuple(ToolCallView(c["turn_id"], c["tool_call_id"], c["tool"],
                                   ToolCallStatus(c["status"]), c["error"],
                                   c["idempotency_key"]) for c in view["tool_calls"])
        messages = tuple(Message(MessageRole(m["role"]), m.get("text", ""),
                                 m.get("turn_id", ""), m.get("tool_call_id", ""),
                                 m.get("tool_output", ""), m.get("tool_arguments", ""))
                         for m in view["messages"])
    except (ValueError, KeyError, TypeError) as error:
        raise SpecError(f"the session object answered a snapshot outside the spec: "
                        f"{error}") from None
    return AgentSnapshot(view["session_id"], calls, messages)


def event_of(view: Json) -> ToolCallFinished:
    try:
        status = ToolCallStatus(view["status"])
    except (ValueError, KeyError) as error:
        raise SpecError(f"the session object published an event outside the spec: "
                        f"{error}") from None
    return ToolCallFinished(view["session_id"], view["turn_id"], view["tool_call_id"], status,
                            view.get("error", ""))
