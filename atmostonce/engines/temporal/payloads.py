"""What travels through Temporal: the inputs of the workflows, updates and the tool activity,
and the answers of the queries, as plain dataclasses Temporal's default JSON converter carries;
and their conversion to and from the spec's types (policies, snapshots, events).

Enum values travel as their strings, so a payload reads the same in a workflow history as in
the spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import (
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallFinished,
    ToolCallStatus,
    ToolCallView,
)


@dataclass
class Settings:
    """The options a session workflow runs its calls with: the harness's `ExecutorConfig` and
    the mapping's variant (`mapping.Variant`)."""

    max_attempts: int
    retry_backoff: float
    queue_timeout: float
    run_timeout: float
    heartbeat_timeout: float
    lease: float
    approval_deadline: float
    variant: str = "page"
    retry_every_class: bool = False
    cancel_records_failed: bool = False
    """D-4's choice the harness declares for a start-to-close timeout of a single attempt."""

    def config(self) -> ExecutorConfig:
        return ExecutorConfig(self.max_attempts, self.retry_backoff, self.queue_timeout,
                              self.run_timeout, self.heartbeat_timeout, self.lease,
                              self.approval_deadline,
                              cancel_records_failed=self.cancel_records_failed)


@dataclass
class SessionStart:
    session_id: str
    default_effect: str | None
    settings: Settings


@dataclass
class Statement:
    """A tool's policy and framework hints as the registry keeps them."""

    effect: str | None = None
    requires_approval: bool | None = None
    hinted: bool = False
    read_only: bool | None = None
    idempotent: bool | None = None
    destructive: bool | None = None


@dataclass
class PolicyChange:
    tool: str
    statement: Statement


@dataclass
class AskInput:
    turn_id: str
    tool_call_id: str
    tool: str
    arguments: str
    statement: Statement = field(default_factory=Statement)
    """The tool's statement in the registry when the call was asked (TC-SNAP-1)."""


@dataclass
class AnswerInput:
    key: str
    approve: bool


@dataclass
class AnswerOutput:
    accepted: bool
    text: str


@dataclass
class ToolJob:
    """The tool activity's input: one attempt of a call runs the tool with the call's key."""

    key: str
    tool: str
    arguments: str


@dataclass
class CallView:
    turn_id: str
    tool_call_id: str
    tool: str
    status: str
    error: str = ""
    idempotency_key: str = ""


@dataclass
class MessageView:
    role: str
    text: str = ""
    turn_id: str = ""
    tool_call_id: str = ""
    tool_output: str = ""
    tool_arguments: str = ""


@dataclass
class SnapshotView:
    session_id: str
    tool_calls: list[CallView] = field(default_factory=list)
    messages: list[MessageView] = field(default_factory=list)


@dataclass
class EventView:
    session_id: str
    turn_id: str
    tool_call_id: str
    status: str
    error: str = ""


def settings_of(config: ExecutorConfig, variant: str = "page",
                retry_every_class: bool = False) -> Settings:
    return Settings(config.max_attempts, config.retry_backoff, config.queue_timeout,
                    config.run_timeout, config.heartbeat_timeout, config.lease,
                    config.approval_deadline, variant, retry_every_class,
                    config.cancel_records_failed)


def statement_of(policy: ToolPolicy | None, hints: ToolHints | None) -> Statement:
    return Statement(policy.effect.value if policy is not None else None,
                     policy.requires_approval if policy is not None else None,
                     hints is not None,
                     hints.read_only if hints is not None else None,
                     hints.idempotent if hints is not None else None,
                     hints.destructive if hints is not None else None)


def policy_of(statement: Statement) -> tuple[ToolPolicy | None, ToolHints | None]:
    """The policy and hints a statement holds; SpecError for a malformed one."""
    policy = (ToolPolicy.of(statement.effect, statement.requires_approval)
              if statement.effect is not None else None)
    hints = (ToolHints(statement.read_only, statement.idempotent, statement.destructive)
             if statement.hinted else None)
    return policy, hints


def effect_of(name: str | None) -> EffectClass | None:
    return EffectClass.parse(name) if name is not None else None


def snapshot_of(view: SnapshotView) -> AgentSnapshot:
    """The spec's snapshot from the query's answer; SpecError for a status or role that is
    none of the spec's."""
    try:
        calls = tuple(ToolCallView(c.turn_id, c.tool_call_id, c.tool, ToolCallStatus(c.status),
                                   c.error, c.idempotency_key) for c in view.tool_calls)
        messages = tuple(Message(MessageRole(m.role), m.text, m.turn_id, m.tool_call_id,
                                 m.tool_output, m.tool_arguments) for m in view.messages)
    except ValueError as error:
        raise SpecError(f"the session workflow answered a snapshot outside the spec: "
                        f"{error}") from None
    return AgentSnapshot(view.session_id, calls, messages)


def event_of(view: EventView) -> ToolCallFinished:
    try:
        status = ToolCallStatus(view.status)
    except ValueError as error:
        raise SpecError(f"the session workflow published an event outside the spec: "
                        f"{error}") from None
    return ToolCallFinished(view.session_id, view.turn_id, view.tool_call_id, status,
                            view.error)
