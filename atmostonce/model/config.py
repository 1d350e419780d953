"""The bounds of a model check: workers, calls, faults, the tool mix and the executor options."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, EffectivePolicy, ToolPolicy, resolve_policy

LEDGER_MODES = ("plain", "key", "business")
CHANGED_DEADLINE = 60.0
"""Seconds of the approval deadline a changed policy sets (D-32); the policies a check starts
with leave it to the engine's setting."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool of the mix: its name and the policy it has when the check starts.

    A policy change flips whether the tool waits for approval, except for an unclassified tool,
    which is reclassified `idempotent_write`, as the page advises once its service is known to
    drop repeated keys (TC-KEY-3). What the tool does to its service never changes.
    """

    name: str
    policy: ToolPolicy

    @property
    def effect(self) -> EffectClass:
        return self.policy.effect

    def changed_policy(self) -> ToolPolicy:
        """The policy the tool gets when the developer changes it (TC-SNAP-2), with an approval
        deadline of its own (D-32)."""
        if self.effect is EffectClass.UNCLASSIFIED:
            return ToolPolicy(EffectClass.IDEMPOTENT_WRITE, None, CHANGED_DEADLINE)
        return ToolPolicy(self.effect, not resolve_policy(self.policy).requires_approval,
                          CHANGED_DEADLINE)

    def variant(self, changed: bool) -> EffectivePolicy:
        """The effective policy before (`changed` false) or after a policy change."""
        return resolve_policy(self.changed_policy() if changed else self.policy)

    def deadline(self, changed: bool) -> float | None:
        """The approval deadline the policy before or after a change sets (D-32); None leaves
        it to the engine's setting. A call keeps the one in force when it was asked: the model
        abstracts time, so any deadline may pass at any step of the wait, and conformance
        compares the executor's kept deadline and its timer with this one."""
        return (self.changed_policy() if changed else self.policy).approval_deadline


def parse_tool(text: str) -> ToolSpec:
    """`effect[+approval|-approval]`, e.g. `read`, `idempotent_write+approval`."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"tool must be an effect class name, got {text!r}")
    name, approval = text.strip(), None
    for suffix, value in (("+approval", True), ("-approval", False)):
        if name.endswith(suffix):
            name, approval = name[: -len(suffix)], value
    return ToolSpec(text.strip(), ToolPolicy.of(name, approval))


def parse_tools(text: str) -> tuple[ToolSpec, ...]:
    """A comma-separated tool mix; SpecError for an unknown class or a repeated tool."""
    tools = tuple(parse_tool(part) for part in text.split(","))
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise SpecError(f"tool mix names a tool twice: {text!r}")
    return tools


DEFAULT_TOOLS = parse_tools("read,idempotent_write,non_idempotent_write,unclassified")


@dataclass(frozen=True)
class ModelConfig:
    """The bounds and options of one exhaustive check.

    Fault budgets bound how many crashes, connection losses, restarts and time-outs the
    environment may inject on one path, each kind on its own and all kinds together (`faults`);
    `calls` initial asks plus `reasks` asks again after a failed or unknown record bound the
    calls.
    """

    workers: int = 2
    calls: int = 2
    reasks: int = 1
    max_attempts: int = 2
    crashes: int = 1
    partitions: int = 1
    restarts: int = 1
    timeouts: int = 1
    faults: int = 2
    policy_changes: int = 1
    reconcile_crashes: int = 1
    tools: tuple[ToolSpec, ...] = field(default=DEFAULT_TOOLS)
    fence: bool = False
    ledger: str = "plain"
    mutant: str | None = None

    def __post_init__(self) -> None:
        limits = {
            "workers": (1, 3), "calls": (1, 4), "reasks": (0, 3), "max_attempts": (1, 5),
            "crashes": (0, 3), "partitions": (0, 3), "restarts": (0, 2), "timeouts": (0, 3),
            "faults": (0, 6),
            "policy_changes": (0, 2), "reconcile_crashes": (0, 2),
        }
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise SpecError(f"--{name.replace('_', '-')} must be a whole number, "
                                f"got {value!r}")
            if not low <= value <= high:
                raise SpecError(f"--{name.replace('_', '-')} must be between {low} and "
                                f"{high}, got {value}")
        if not self.tools:
            raise SpecError("the tool mix is empty")
        if len(self.tools) > 6:
            raise SpecError(f"the tool mix may hold at most 6 tools, got {len(self.tools)}")
        if self.ledger not in LEDGER_MODES:
            raise SpecError(f"unknown ledger mode {self.ledger!r} "
                            f"(known: {', '.join(LEDGER_MODES)})")

    def with_(self, **changes: object) -> ModelConfig:
        return replace(self, **changes)  # type: ignore[arg-type]

    def describe(self) -> str:
        tools = ",".join(t.name for t in self.tools)
        parts = [
            f"workers={self.workers}", f"calls={self.calls}", f"reasks={self.reasks}",
            f"max-attempts={self.max_attempts}", f"crashes={self.crashes}",
            f"partitions={self.partitions}", f"restarts={self.restarts}",
            f"timeouts={self.timeouts}", f"faults={self.faults}",
            f"policy-changes={self.policy_changes}",
            f"tools={tools}", f"ledger={self.ledger}",
        ]
        if self.fence:
            parts.append("fence")
        if self.mutant:
            parts.append(f"mutant={self.mutant}")
        return " ".join(parts)
