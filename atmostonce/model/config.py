"""The bounds of a model check: workers, calls, faults, the tool mix and the executor options."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
    ToolHints,
    ToolPolicy,
    resolve_policy,
)

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

    A tool with a `hint` has no ToolPolicy at first: only framework metadata claiming the hinted
    class, which may be wrong; `policy` is then what the tool really does, and the policy a
    change gives it (D-22).
    """

    name: str
    policy: ToolPolicy
    hint: EffectClass | None = None

    @property
    def effect(self) -> EffectClass:
        return self.policy.effect

    @property
    def hints(self) -> ToolHints | None:
        """The framework metadata of a hinted tool, as MCP annotations would say it."""
        return None if self.hint is None else _HINTS[self.hint]

    @property
    def initial_policy(self) -> ToolPolicy | None:
        """The ToolPolicy the tool has when the check starts: none for a hinted tool."""
        return None if self.hint is not None else self.policy

    def changed_policy(self) -> ToolPolicy:
        """The policy the tool gets when the developer changes it (TC-SNAP-2), with an approval
        deadline of its own (D-32)."""
        if self.hint is not None:
            return replace(self.policy, approval_deadline=CHANGED_DEADLINE)
        if self.effect is EffectClass.UNCLASSIFIED:
            return ToolPolicy(EffectClass.IDEMPOTENT_WRITE, None, CHANGED_DEADLINE)
        return ToolPolicy(self.effect, not resolve_policy(self.policy).requires_approval,
                          CHANGED_DEADLINE)

    def variant(self, changed: bool, session_default: EffectClass | None = None,
                hints_may_lower: bool = True) -> EffectivePolicy:
        """The effective policy before (`changed` false) or after a policy change, in a session
        with `session_default` and D-22's choice `hints_may_lower`."""
        if changed:
            return resolve_policy(self.changed_policy(), None, session_default, hints_may_lower)
        return resolve_policy(self.initial_policy, self.hints, session_default, hints_may_lower)

    def deadline(self, changed: bool) -> float | None:
        """The approval deadline the policy before or after a change sets (D-32); None leaves
        it to the engine's setting. A call keeps the one in force when it was asked: the model
        abstracts time, so any deadline may pass at any step of the wait, and conformance
        compares the executor's kept deadline and its timer with this one."""
        policy = self.changed_policy() if changed else self.initial_policy
        return None if policy is None else policy.approval_deadline


_HINTS = {
    EffectClass.READ: ToolHints(read_only=True),
    EffectClass.IDEMPOTENT_WRITE: ToolHints(idempotent=True),
    EffectClass.NON_IDEMPOTENT_WRITE: ToolHints(read_only=False),
}


def parse_tool(text: str) -> ToolSpec:
    """`effect[+approval|-approval]`, e.g. `read`, `idempotent_write+approval`; or
    `effect~hint`, a tool that really is `effect` with no ToolPolicy, whose framework metadata
    claims `hint` (read, idempotent_write or non_idempotent_write), e.g.
    `non_idempotent_write~read`."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"tool must be an effect class name, got {text!r}")
    if "~" in text:
        actual, _, hinted = text.strip().partition("~")
        hint = EffectClass.parse(hinted)
        if hint not in _HINTS:
            raise SpecError(f"framework metadata cannot claim {hint.value}: a hint is read, "
                            "idempotent_write or non_idempotent_write")
        return ToolSpec(text.strip(), ToolPolicy.of(actual), hint)
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
    reconcile_cancelled: bool = False
    """The reconcile job also reports failed calls whose tool may still be running (D-20)."""
    session_default: EffectClass | None = None
    """The session's default effect, which a hinted tool without a policy falls back on."""
    hints_may_lower: bool = True
    """D-22: whether framework metadata may lower the session's default effect."""
    cancel_records_failed: bool = False
    """D-4's other choice: a cancelled or timed-out single attempt that reached a worker
    records failed, 'may still be running' (F-7), not outcome_unknown."""
    restart_while_waiting: bool = True
    """A server restart may also strike while a call waits for approval and no attempt is out
    (D-8): the call must keep waiting, with its deadline, across the restart."""

    def policy_of(self, tool: ToolSpec, changed: bool) -> EffectivePolicy:
        """`tool`'s effective policy in this configuration's session (D-1, D-22)."""
        return tool.variant(changed, self.session_default, self.hints_may_lower)

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
        if self.session_default is not None and not isinstance(self.session_default,
                                                                EffectClass):
            raise SpecError(f"the session default must be an effect class, got "
                            f"{self.session_default!r}")
        if not isinstance(self.cancel_records_failed, bool):
            raise SpecError(f"cancel_records_failed must be true or false, got "
                            f"{self.cancel_records_failed!r}")
        if not isinstance(self.restart_while_waiting, bool):
            raise SpecError(f"restart_while_waiting must be true or false, got "
                            f"{self.restart_while_waiting!r}")
        if not isinstance(self.hints_may_lower, bool):
            raise SpecError(f"hints_may_lower must be true or false, got "
                            f"{self.hints_may_lower!r}")
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
        if self.cancel_records_failed:
            parts.append("cancel-records-failed")
        if self.reconcile_cancelled:
            parts.append("reconcile-cancelled")
        if self.session_default is not None:
            parts.append(f"session-default={self.session_default.value}")
        if not self.hints_may_lower:
            parts.append("hints-keep-default")
        if not self.restart_while_waiting:
            parts.append("no-restart-while-waiting")
        if self.mutant:
            parts.append(f"mutant={self.mutant}")
        return " ".join(parts)
