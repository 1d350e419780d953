"""Counterexamples and witnesses as numbered, readable steps, and as JSON the executor layers
replay.

The explorer keeps canonical states (workers renamed, calls sorted); a trace replays the path
on concrete states, so calls keep the numbers they were asked with and workers keep theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from atmostonce.model import layout as s
from atmostonce.model.config import ModelConfig, parse_tools
from atmostonce.model.explorer import Finding
from atmostonce.model.layout import Call, Label, State
from atmostonce.model.system import System
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import Record
from atmostonce.spec.step_kinds import StepKind

TRACE_FORMAT = "atmostonce-trace/1"


@dataclass
class TraceStep:
    number: int
    label: Label
    action: dict[str, Any]
    text: str
    changes: list[str] = field(default_factory=list)


@dataclass
class Trace:
    """A path from the initial state: what each step did and what it changed."""

    property: str
    message: str
    kind: str
    steps: list[TraceStep]
    config: dict[str, Any]
    final: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The trace as the executor layers replay it: the bounds and the concrete steps."""
        return {
            "format": TRACE_FORMAT,
            "kind": self.kind,
            "property": self.property,
            "message": self.message,
            "config": self.config,
            "steps": [step.action for step in self.steps],
            "final": self.final,
        }

    def render(self) -> str:
        lines = [f"{self.kind} of {self.property}: {self.message}" if self.message
                 else f"{self.kind} of {self.property}"]
        if not self.steps:
            lines.append("  (the initial state)")
        for step in self.steps:
            lines.append(f"  {step.number:>2}. {step.text}")
            for change in step.changes:
                lines.append(f"      - {change}")
        return "\n".join(lines)


def config_json(c: ModelConfig) -> dict[str, Any]:
    return {
        "workers": c.workers, "calls": c.calls, "reasks": c.reasks,
        "max_attempts": c.max_attempts, "crashes": c.crashes, "partitions": c.partitions,
        "restarts": c.restarts, "timeouts": c.timeouts, "faults": c.faults,
        "policy_changes": c.policy_changes, "reconcile_crashes": c.reconcile_crashes,
        "tools": [t.name for t in c.tools], "fence": c.fence, "ledger": c.ledger,
        "mutant": c.mutant,
        **({"reconcile_cancelled": True} if c.reconcile_cancelled else {}),
        **({"cancel_records_failed": True} if c.cancel_records_failed else {}),
        **({"session_default": c.session_default.value} if c.session_default else {}),
        **({} if c.hints_may_lower else {"hints_may_lower": False}),
    }


class Paths(Protocol):
    """What a trace is replayed from: the explored system, its canonical form and the
    canonical states on the way to any explored state (an `Explorer`, or a parallel run's)."""

    system: System
    canonical: Callable[[State], State]

    def path(self, target: int) -> list[tuple[Label | None, State]]: ...


def build(explorer: Paths, finding: Finding, kind: str) -> Trace:
    """Replay the explorer's path to `finding` on concrete states."""
    system = explorer.system
    canonical_path = [st for _, st in explorer.path(finding.target if finding.label is None
                                                    else finding.source)]
    canonical = explorer.canonical
    targets = canonical_path[1:]
    if finding.label is not None and finding.successor is not None:
        targets.append(canonical(finding.successor))
    state = system.initial()
    steps: list[TraceStep] = []
    noted = finding.noted
    for number, target in enumerate(targets, start=1):
        last = number == len(targets)
        for succ in system.successors(state):
            if last and noted and not any(n.lstrip("!") == finding.property for n in succ.notes):
                continue
            if canonical(succ.state) == target:
                steps.append(describe_step(system, number, state, succ.label, succ.state))
                state = succ.state
                break
        else:  # pragma: no cover - the explorer only stores reachable states
            raise RuntimeError(f"trace replay lost its way at step {number}")
    return Trace(finding.property, finding.message, kind, steps, config_json(system.config),
                 describe_state(system, state))


def _tool(system: System, t: int) -> str:
    return system.config.tools[t].name


def _call_name(system: System, state: State, i: int) -> str:
    c = system.calls_of(state)[i]
    return f"call {i} ({_tool(system, c[s.T])})"


_WORKER_STEPS = (StepKind.CRASH, StepKind.DISCONNECT, StepKind.RECONNECT, StepKind.DETECT,
                StepKind.REJOIN)
"""The steps whose label names a worker, not a call."""


def action_json(system: System, state: State, label: Label) -> dict[str, Any]:
    kind, a, b = label
    action: dict[str, Any] = {"action": kind}
    if kind in (StepKind.ASK, StepKind.CHANGE_POLICY):
        action["tool"] = _tool(system, a)
    elif kind in _WORKER_STEPS:
        action["worker"] = a
    elif kind == StepKind.RESTART:
        pass
    else:
        if a >= 0:
            action["call"] = a
        if b >= 0:
            action["worker"] = b
    return action


_TEXT = {
    StepKind.ASK: "the agent's model asks for {tool}",
    StepKind.REASK: "the model asks for {call}'s tool again, as a new call",
    StepKind.CHANGE_POLICY: "the developer changes the policy of {tool}",
    StepKind.APPROVE: "a person approves {call}",
    StepKind.REJECT: "a person rejects {call}",
    StepKind.DEADLINE: "the approval deadline of {call} passes",
    StepKind.EXPIRE: "{call}'s attempt times out in the queue before any worker took it",
    StepKind.HAND: "the server records {call}'s attempt as handed to worker {worker}, then sends "
                   "the go-ahead",
    StepKind.GO: "worker {worker} gets the go-ahead and starts {call}'s tool",
    StepKind.HEARTBEAT: "worker {worker}'s first heartbeat for {call} reaches the server",
    StepKind.TIME_OUT: "{call}'s attempt times out on worker {worker}; the server cancels it "
                       "(cooperatively)",
    StepKind.APPLY: "{call}'s tool on worker {worker} writes its effect to the service",
    StepKind.FINISH_OK: "{call}'s tool on worker {worker} returns a result",
    StepKind.FINISH_FAIL: "{call}'s tool on worker {worker} reports a failure",
    StepKind.CRASH: "worker {worker} crashes",
    StepKind.DISCONNECT: "worker {worker} loses its connection to the server",
    StepKind.RECONNECT: "worker {worker}'s connection comes back",
    StepKind.DETECT: "the heartbeat timeout declares worker {worker} lost",
    StepKind.REJOIN: "worker {worker} comes back as a fresh worker",
    StepKind.RESTART: "the server restarts; every connection drops",
    StepKind.RECONCILE: "the reconcile job reads the history and reports every unknown call",
    StepKind.RECONCILE_CRASH: "the reconcile job reports {call}, then crashes before the send "
                              "returns",
}


def describe_step(system: System, number: int, before: State, label: Label, after: State
                  ) -> TraceStep:
    """Step `number`, `label` taken in `before` to reach `after`: its action, its sentence and
    what it changed."""
    kind, a, b = label
    action = action_json(system, before, label)
    words: dict[str, str] = {}
    if "tool" in action:
        words["tool"] = f"tool {action['tool']}"
    if kind in _WORKER_STEPS:
        words["worker"] = str(a)
    elif a >= 0 and kind not in (StepKind.ASK, StepKind.CHANGE_POLICY, StepKind.RESTART,
                                 StepKind.RECONCILE):
        words["call"] = _call_name(system, before, a)
        words["worker"] = str(b)
    text = _TEXT.get(kind, kind).format(**words)
    return TraceStep(number, label, action, text[0].upper() + text[1:], diff(system, before, after))


def describe_call(system: System, c: Call) -> dict[str, Any]:
    record = s.RECORD_OF_STATE.get(c[s.CS])
    out: dict[str, Any] = {
        "tool": _tool(system, c[s.T]),
        "call": s.CALL_TOOL.states[c[s.CS]],
        "attempts": c[s.NATT],
        "attempt": s.ATTEMPT.states[c[s.AS]],
        "runs": [f"worker {w}: {s.RUN.states[rs]} (attempt {an})"
                 for w, rs, an in system.runs(c[s.RUNS])],
        "tool_ran": s.runs_started(c[s.G]),
        "handed_out": s.hands(c[s.G]),
    }
    if c[s.AW] >= 0:
        out["attempt_worker"] = c[s.AW]
    if record is not None:
        out["record"] = record.value
        if c[s.FK]:
            out["error"] = s.FAILURE_OF_INDEX[c[s.FK]].value
        if record is Record.OUTCOME_UNKNOWN or c[s.REP]:
            out["reports"] = c[s.REP]
    if c[s.ABW] >= 0:
        out["abandoned_run_on_worker"] = c[s.ABW]
    return out


def describe_state(system: System, state: State) -> dict[str, Any]:
    ws = state[s.NG: s.NG + system.workers]
    te = state[s.TE]
    changed = state[s.TV]
    return {
        "workers": [s.WORKER.states[w] for w in ws],
        "policies": {t.name: "changed" if changed >> i & 1 else "initial"
                     for i, t in enumerate(system.config.tools)},
        "calls": [describe_call(system, c) for c in system.calls_of(state)],
        "effects_by_tool": {t.name: te >> (2 * i) & 3 for i, t in enumerate(system.config.tools)
                            if t.effect.value != "read"},
    }


def diff(system: System, before: State, after: State) -> list[str]:
    """What a step changed, field by field, in the model's words."""
    out: list[str] = []
    b, a = describe_state(system, before), describe_state(system, after)
    for w, (x, y) in enumerate(zip(b["workers"], a["workers"], strict=True)):
        if x != y:
            out.append(f"worker {w}: {x} -> {y}")
    for i, call in enumerate(a["calls"]):
        old = b["calls"][i] if i < len(b["calls"]) else None
        if old is None:
            out.append(f"call {i} asked: {call['tool']}, {call['call']}")
            continue
        for key in dict.fromkeys([*old, *call]):
            if old.get(key) != call.get(key):
                out.append(f"call {i} {key}: {old.get(key)} -> {call.get(key)}")
    for tool, policy in a["policies"].items():
        if b["policies"][tool] != policy:
            out.append(f"policy of {tool}: {b['policies'][tool]} -> {policy}")
    for tool, count in a["effects_by_tool"].items():
        if b["effects_by_tool"].get(tool) != count:
            out.append(f"service of {tool}: effects applied {b['effects_by_tool'].get(tool)} -> "
                       f"{count}")
    return out


def config_from_json(data: object) -> ModelConfig:
    """The bounds a trace was found with, from its `config` (the inverse of `config_json`);
    SpecError, one line, for anything else."""
    if not isinstance(data, dict):
        raise SpecError(f"a trace's config must be an object, got {type(data).__name__}")
    numbers = ("workers", "calls", "reasks", "max_attempts", "crashes", "partitions",
               "restarts", "timeouts", "faults", "policy_changes", "reconcile_crashes")
    missing = [k for k in (*numbers, "tools") if k not in data]
    if missing:
        raise SpecError(f"a trace's config lacks {', '.join(missing)}")
    tools = data["tools"]
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise SpecError(f"a trace's config tools must be a list of names, got {tools!r}")
    default = data.get("session_default")
    return ModelConfig(
        **{k: data[k] for k in numbers},
        tools=parse_tools(",".join(tools)),
        fence=bool(data.get("fence", False)),
        ledger=str(data.get("ledger", "plain")),
        mutant=data.get("mutant"),
        reconcile_cancelled=bool(data.get("reconcile_cancelled", False)),
        cancel_records_failed=bool(data.get("cancel_records_failed", False)),
        session_default=None if default is None else EffectClass.parse(default),
        hints_may_lower=bool(data.get("hints_may_lower", True)),
    )
