"""The policies in force as a harness sees them: what was set per tool and each session's
default effect, and the effective policy a call asked now gets, resolved by the spec."""

from __future__ import annotations

from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
    ToolHints,
    ToolPolicy,
    resolve_policy,
)


class PolicyBook:
    """Set policies and session defaults, with `now` memoised per tool and per default: the
    simulator and the history checker ask it on every call (TC-POL-1, D-1)."""

    __slots__ = ("_defaults", "_resolved", "_set")

    def __init__(self) -> None:
        self._set: dict[str, tuple[ToolPolicy | None, ToolHints | None]] = {}
        self._defaults: dict[str, tuple[EffectClass | None, bool]] = {}
        self._resolved: dict[str, dict[tuple[EffectClass | None, bool], EffectivePolicy]] = {}
        """Resolved policies by tool, then by the session default and whether hints may lower
        it (D-22); a tool's are forgotten when its policy changes."""

    def set_policy(self, tool: str, policy: ToolPolicy | None, hints: ToolHints | None) -> None:
        self._set[tool] = (policy, hints)
        self._resolved.pop(tool, None)

    def set_default(self, session_id: str, effect: EffectClass | None,
                    hints_may_lower: bool = True) -> None:
        self._defaults[session_id] = (effect, hints_may_lower)

    def deadline(self, tool: str) -> float | None:
        """The approval deadline the tool's policy sets now, if any (D-32)."""
        policy = self._set.get(tool, (None, None))[0]
        return policy.approval_deadline if policy is not None else None

    def now(self, tool: str, session_id: str) -> EffectivePolicy:
        """The policy a call of `tool` in `session_id` asked now gets."""
        default, lowers = self._defaults.get(session_id, (None, True))
        of_tool = self._resolved.get(tool)
        if of_tool is None:
            of_tool = self._resolved[tool] = {}
        slot = (default, lowers)
        found = of_tool.get(slot)
        if found is None:
            policy, hints = self._set.get(tool, (None, None))
            found = of_tool[slot] = resolve_policy(policy, hints, default, lowers)
        return found
