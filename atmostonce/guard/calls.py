"""What the guard keeps of a call when the model asks for it: the effective policy the spec
resolves then (`atmostonce.spec.policy.resolve_policy`), the approval deadline, the attempts
it may get, and the approval state it starts in. Kept once, used for every later run of the
call (TC-SNAP-1), so a policy changed after the ask never reaches it. Pure: the journal stores
what these functions return.
"""

from __future__ import annotations

from dataclasses import dataclass

from atmostonce.spec.approval import ApprovalState, initial_approval
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import IdempotencyKey, parse_key
from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
    ToolHints,
    ToolPolicy,
    choose_deadline,
    deadline_problem,
    resolve_policy,
)


@dataclass(frozen=True)
class Statement:
    """Everything the page lets decide a call's policy at ask time: the tool's ToolPolicy,
    framework metadata about the tool (such as MCP annotations), the session's default effect,
    and the ask's own approval deadline in seconds (D-32)."""

    policy: ToolPolicy | None = None
    hints: ToolHints | None = None
    session_default: EffectClass | None = None
    deadline: float | None = None


@dataclass(frozen=True)
class GuardSettings:
    """The guard's own settings: attempts for a call with retries, seconds between two of them
    in one process, and the approval deadline when neither the ask nor the policy sets one."""

    max_attempts: int = 3
    retry_backoff: float = 0.5
    approval_deadline: float = 3600.0

    def __post_init__(self) -> None:
        if (isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int)
                or self.max_attempts < 1):
            raise SpecError(f"max_attempts must be a whole number >= 1, got "
                            f"{self.max_attempts!r}")
        for name in ("retry_backoff", "approval_deadline"):
            problem = deadline_problem(getattr(self, name))
            if problem is not None or getattr(self, name) is None:
                raise SpecError(f"{name} {problem or 'must be set'}")


@dataclass(frozen=True)
class KeptCall:
    """A call as the guard keeps it from ask time."""

    key: str
    tool: str
    arguments: str
    policy: EffectivePolicy
    asked: float
    deadline: float | None
    """When its approval deadline passes, on the guard's clock; None when it needs none."""
    max_attempts: int
    """Attempts it may get in all, from the guard's settings at ask time (one for a
    single-attempt call, whatever this says)."""

    @property
    def parts(self) -> IdempotencyKey:
        return parse_key(self.key)

    @property
    def approval(self) -> ApprovalState:
        """The approval state the call starts in."""
        return initial_approval(self.policy.requires_approval)


def keep(key: str, tool: str, arguments: str, statement: Statement, settings: GuardSettings,
         now: float) -> KeptCall:
    """The call the model asks for now, with the policy the spec resolves from `statement`
    (TC-POL-1, D-1) and its deadline (D-32); SpecError for a key that is not
    `{flow}/{turn}/{call}` (D-2)."""
    parse_key(key)
    if not isinstance(tool, str) or not tool:
        raise SpecError(f"tool must be a non-empty string, got {tool!r}")
    problem = deadline_problem(statement.deadline)
    if problem is not None:
        raise SpecError(f"the ask's approval deadline {problem}")
    effective = resolve_policy(statement.policy, statement.hints, statement.session_default)
    wait = choose_deadline(statement.deadline,
                           statement.policy.approval_deadline if statement.policy else None,
                           settings.approval_deadline)
    return KeptCall(key, tool, arguments, effective, now,
                    now + wait if effective.requires_approval else None, settings.max_attempts)
