"""Tool policies: effect classes, approval defaults, and how a call's effective policy is resolved.

Clause ids: TC-POL-*, TC-EFF-*, TC-APR-*, TC-SNAP-*, decisions D-1, D-11, D-22 and D-32.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from atmostonce.spec.errors import SpecError


class EffectClass(enum.Enum):
    """What a tool does to the world; decides whether a call may run again (TC-POL-2)."""

    READ = "read"
    IDEMPOTENT_WRITE = "idempotent_write"
    NON_IDEMPOTENT_WRITE = "non_idempotent_write"
    UNCLASSIFIED = "unclassified"

    @classmethod
    def parse(cls, name: object) -> EffectClass:
        """The effect class called `name`; SpecError for anything else."""
        if isinstance(name, EffectClass):
            return name
        if not isinstance(name, str):
            raise SpecError(f"effect class must be a string, got {type(name).__name__}")
        for member in cls:
            if member.value == name:
                return member
        known = ", ".join(m.value for m in cls)
        raise SpecError(f"unknown effect class {name!r} (known: {known})")


class DurableStep(enum.Enum):
    """The durable Step that runs a call: with retries, or exactly one attempt."""

    CALL_TOOL = "CallTool"
    CALL_SINGLE_ATTEMPT_TOOL = "CallSingleAttemptTool"


class PolicySource(enum.Enum):
    """Where a call's effect class came from, in precedence order (D-1)."""

    TOOL_POLICY = "tool_policy"
    FRAMEWORK_METADATA = "framework_metadata"
    SESSION_DEFAULT = "session_default"
    FALLBACK = "fallback"


# TC-EFF-READ, TC-EFF-IDEM, TC-EFF-NONIDEM, TC-EFF-UNCL: effect class -> the Step that runs it.
STEP_BY_EFFECT: Mapping[EffectClass, DurableStep] = {
    EffectClass.READ: DurableStep.CALL_TOOL,
    EffectClass.IDEMPOTENT_WRITE: DurableStep.CALL_TOOL,
    EffectClass.NON_IDEMPOTENT_WRITE: DurableStep.CALL_SINGLE_ATTEMPT_TOOL,
    EffectClass.UNCLASSIFIED: DurableStep.CALL_SINGLE_ATTEMPT_TOOL,
}

# TC-APR-2: effect class -> whether a call waits for approval when the policy leaves it unset.
APPROVAL_DEFAULT_BY_EFFECT: Mapping[EffectClass, bool] = {
    EffectClass.READ: False,
    EffectClass.IDEMPOTENT_WRITE: False,
    EffectClass.NON_IDEMPOTENT_WRITE: True,
    EffectClass.UNCLASSIFIED: True,
}


# D-22: how cautious each effect class is; with hints_may_lower false, framework metadata may
# not pick a class less cautious than the session's default.
CAUTION: Mapping[EffectClass, int] = {
    EffectClass.READ: 0,
    EffectClass.IDEMPOTENT_WRITE: 1,
    EffectClass.NON_IDEMPOTENT_WRITE: 2,
    EffectClass.UNCLASSIFIED: 2,
}

def step_for(effect: EffectClass) -> DurableStep:
    """The Step that runs calls of `effect` (TC-EFF-READ, TC-EFF-IDEM, TC-EFF-NONIDEM, TC-EFF-UNCL).

    post: (__return__ is DurableStep.CALL_TOOL) == (effect in (EffectClass.READ, EffectClass.IDEMPOTENT_WRITE))
    """
    return STEP_BY_EFFECT[effect]


def retries_allowed(effect: EffectClass) -> bool:
    """Whether the engine may run a call of `effect` again after a failure (TC-POL-2).

    post: __return__ == (step_for(effect) is DurableStep.CALL_TOOL)
    """
    return effect in (EffectClass.READ, EffectClass.IDEMPOTENT_WRITE)


def default_requires_approval(effect: EffectClass) -> bool:
    """Whether a call waits for approval when `requires_approval` is unset (TC-APR-2).

    post: __return__ == (not retries_allowed(effect))
    """
    return APPROVAL_DEFAULT_BY_EFFECT[effect]


def deadline_problem(value: object) -> str | None:
    """Why `value` is no approval deadline (a finite number of seconds >= 0, or unset), or
    None when it is one (D-32)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number of seconds or unset, got {value!r}"
    if not (math.isfinite(value) and value >= 0):
        return f"must be a finite number of seconds >= 0, got {value!r}"
    return None


def choose_deadline(asked: float | None, policy: float | None, setting: float) -> float:
    """A call's approval deadline: the ask's own when it sets one, else its tool policy's, else
    the engine's setting (D-32). The call keeps it from ask time, like its effect class
    (TC-SNAP-1).

    post: asked is None or __return__ is asked
    post: asked is not None or policy is None or __return__ is policy
    post: asked is not None or policy is not None or __return__ is setting
    """
    if asked is not None:
        return asked
    if policy is not None:
        return policy
    return setting


@dataclass(frozen=True)
class ToolPolicy:
    """The policy a developer sets on a tool: effect class and optional approval rule (TC-APR-1),
    and optionally how long a call waits for a person before it is rejected (D-32; unset: the
    engine's setting)."""

    effect: EffectClass
    requires_approval: bool | None = None
    approval_deadline: float | None = None

    def __post_init__(self) -> None:
        problem = deadline_problem(self.approval_deadline)
        if problem is not None:
            raise SpecError(f"ToolPolicy.approval_deadline {problem}")
        if not isinstance(self.effect, EffectClass):
            raise SpecError(
                f"ToolPolicy.effect must be an EffectClass, got {self.effect!r}; "
                "use ToolPolicy.of(name) to parse a name"
            )
        if self.requires_approval is not None and not isinstance(self.requires_approval, bool):
            raise SpecError(
                "ToolPolicy.requires_approval must be true, false or unset, "
                f"got {self.requires_approval!r}"
            )

    @classmethod
    def of(cls, effect: object, requires_approval: object = None,
           approval_deadline: object = None) -> ToolPolicy:
        """A policy from an effect-class name, an optional approval flag and an optional
        approval deadline in seconds; SpecError if bad."""
        if requires_approval is not None and not isinstance(requires_approval, bool):
            raise SpecError(
                f"requires_approval must be true, false or unset, got {requires_approval!r}"
            )
        problem = deadline_problem(approval_deadline)
        if problem is not None:
            raise SpecError(f"approval_deadline {problem}")
        deadline = None if approval_deadline is None else float(cast(float, approval_deadline))
        return cls(EffectClass.parse(effect), requires_approval, deadline)


@dataclass(frozen=True)
class ToolHints:
    """Framework metadata about a tool, such as MCP tool annotations (D-11)."""

    read_only: bool | None = None
    idempotent: bool | None = None
    destructive: bool | None = None

    def __post_init__(self) -> None:
        for name in ("read_only", "idempotent", "destructive"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise SpecError(f"tool hint {name} must be true, false or unset, got {value!r}")

    @classmethod
    def from_mcp(cls, annotations: Mapping[str, object]) -> ToolHints:
        """Hints from MCP `annotations` (readOnlyHint, idempotentHint, destructiveHint)."""
        if not isinstance(annotations, Mapping):
            raise SpecError(
                f"MCP annotations must be a mapping, got {type(annotations).__name__}"
            )
        values: dict[str, bool | None] = {}
        for mcp_name, field in (
            ("readOnlyHint", "read_only"),
            ("idempotentHint", "idempotent"),
            ("destructiveHint", "destructive"),
        ):
            value = annotations.get(mcp_name)
            if value is not None and not isinstance(value, bool):
                raise SpecError(f"MCP annotation {mcp_name} must be a boolean, got {value!r}")
            values[field] = value
        return cls(values["read_only"], values["idempotent"], values["destructive"])


def effect_from_hints(
    read_only: bool | None, idempotent: bool | None, destructive: bool | None
) -> EffectClass | None:
    """The effect class framework metadata asserts, or None when it asserts none (D-11).

    Read-only wins; otherwise a claim of idempotency; otherwise a declared write without that
    claim is non-idempotent. Destructiveness alone says nothing about repeats.

    post: (__return__ is None) == (read_only is not True and idempotent is not True and read_only is not False)
    post: __return__ is not EffectClass.UNCLASSIFIED
    """
    if read_only is True:
        return EffectClass.READ
    if idempotent is True:
        return EffectClass.IDEMPOTENT_WRITE
    if read_only is False:
        return EffectClass.NON_IDEMPOTENT_WRITE
    return None


@dataclass(frozen=True)
class EffectivePolicy:
    """The effect class and approval rule a call keeps from the moment the model asked for it.

    A later change of the tool's policy never touches it (TC-SNAP-1, TC-SNAP-2).
    """

    effect: EffectClass
    requires_approval: bool
    source: PolicySource

    @property
    def step(self) -> DurableStep:
        return step_for(self.effect)

    @property
    def retries_allowed(self) -> bool:
        return retries_allowed(self.effect)


def choose_effect(
    policy_effect: EffectClass | None,
    hinted_effect: EffectClass | None,
    session_default: EffectClass | None,
    hints_may_lower: bool = True,
) -> tuple[EffectClass, PolicySource]:
    """Pick the effect class by precedence: policy, framework metadata, session default (D-1);
    unless `hints_may_lower`, metadata less cautious than the session default loses (D-22).

    post: policy_effect is None or __return__ == (policy_effect, PolicySource.TOOL_POLICY)
    post: policy_effect is not None or hinted_effect is None or not hints_may_lower or __return__[0] is hinted_effect
    post: hints_may_lower or policy_effect is not None or session_default is None or CAUTION[__return__[0]] >= CAUTION[session_default]
    post: policy_effect is not None or hinted_effect is None or __return__[0] in (hinted_effect, session_default)
    post: (__return__[1] is PolicySource.FALLBACK) == (policy_effect is None and hinted_effect is None and session_default is None)
    post: __return__[1] is not PolicySource.FALLBACK or __return__[0] is EffectClass.UNCLASSIFIED
    """
    if policy_effect is not None:
        return policy_effect, PolicySource.TOOL_POLICY
    if hinted_effect is not None:
        if (not hints_may_lower and session_default is not None
                and CAUTION[hinted_effect] < CAUTION[session_default]):
            return session_default, PolicySource.SESSION_DEFAULT
        return hinted_effect, PolicySource.FRAMEWORK_METADATA
    if session_default is not None:
        return session_default, PolicySource.SESSION_DEFAULT
    return EffectClass.UNCLASSIFIED, PolicySource.FALLBACK


def choose_approval(effect: EffectClass, policy_requires_approval: bool | None) -> bool:
    """Whether a call waits for approval: the policy's flag when set, else the class default.

    Clauses TC-APR-2, TC-APR-3, TC-APR-4.

    post: policy_requires_approval is None or __return__ == policy_requires_approval
    post: policy_requires_approval is not None or __return__ == default_requires_approval(effect)
    """
    if policy_requires_approval is not None:
        return policy_requires_approval
    return default_requires_approval(effect)


def resolve_policy(
    policy: ToolPolicy | None,
    hints: ToolHints | None = None,
    session_default: EffectClass | None = None,
    hints_may_lower: bool = True,
) -> EffectivePolicy:
    """The effective policy of a call asked now: every tool gets one (TC-POL-1, TC-APR-5, D-1).

    `hints_may_lower` is the session's choice of D-22: true (the default) lets framework
    metadata lower the session's default effect, false keeps the default as a floor."""
    if policy is not None and not isinstance(policy, ToolPolicy):
        raise SpecError(f"policy must be a ToolPolicy or unset, got {type(policy).__name__}")
    if hints is not None and not isinstance(hints, ToolHints):
        raise SpecError(f"hints must be ToolHints or unset, got {type(hints).__name__}")
    if session_default is not None:
        session_default = EffectClass.parse(session_default)
    if not isinstance(hints_may_lower, bool):
        raise SpecError(f"hints_may_lower must be true or false, got {hints_may_lower!r}")
    hinted = (
        effect_from_hints(hints.read_only, hints.idempotent, hints.destructive)
        if hints is not None
        else None
    )
    effect, source = choose_effect(
        policy.effect if policy is not None else None, hinted, session_default, hints_may_lower
    )
    approval = choose_approval(effect, policy.requires_approval if policy is not None else None)
    return EffectivePolicy(effect, approval, source)
