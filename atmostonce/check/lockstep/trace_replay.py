"""One trace that `atmostonce check --out` wrote, replayed step by step on an executor core in
lockstep with the model, and the per-step report every layer that replays a trace prints.

`load` reads the file (format `atmostonce-trace/1`) and picks a trace by name (its property);
`plan` walks the model, the mutant's when the trace came from one, along the trace's actions and
refuses a trace the model does not allow; `replay_core` drives the executor with the conformance
lockstep (`atmostonce.check.lockstep.conformance.Lockstep`) and says after each step whether it did
what the model did, and if not what it did instead. The runtime's replay
(`atmostonce.runtime.trace_replay`) fills the same `Replay` report.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atmostonce.check.executors import guard
from atmostonce.check.lockstep.conformance import Lockstep
from atmostonce.check.lockstep.state import SESSION, Disagreement
from atmostonce.model.check import choices_for
from atmostonce.model.config import ModelConfig, parse_tool
from atmostonce.model.layout import Label, State
from atmostonce.model.system import System
from atmostonce.model.trace import TRACE_FORMAT, action_json, describe_step
from atmostonce.spec import protocol as p
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass

AGREE = "agree"
DIVERGED = "DIVERGED"
NOT_SCRIPTABLE = "not scriptable"
NOT_REACHED = "not reached"

_INTEGERS = ("workers", "calls", "reasks", "max_attempts", "crashes", "partitions", "restarts",
             "timeouts", "faults", "policy_changes", "reconcile_crashes")


@dataclass(frozen=True)
class LoadedTrace:
    """One trace of a file: what it witnesses or breaks, the model's bounds, its actions."""

    path: str
    name: str
    kind: str
    message: str
    config: ModelConfig
    actions: tuple[dict[str, Any], ...]
    index: int
    names: tuple[str, ...]
    """The names of every trace in the file, in order."""

    def title(self) -> str:
        where = f"trace {self.index + 1} of {len(self.names)} in {self.path}"
        return f"{self.kind} of {self.name} ({where})"


@dataclass(frozen=True)
class PlannedStep:
    """A step of the trace on the model: its label, its sentence, the states around it."""

    number: int
    label: Label
    text: str
    before: State
    after: State


def load(path: Path, name: str | None = None) -> LoadedTrace:
    """The trace called `name` in `path`, or its first; SpecError naming what is wrong."""
    try:
        data = json.loads(path.read_text())
    except OSError as error:
        raise SpecError(f"--trace {path}: cannot read it: {error.strerror}") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise SpecError(f"--trace {path}: not JSON: {error}") from None
    traces = data if isinstance(data, list) else [data]
    if not traces:
        raise SpecError(f"--trace {path}: holds no trace (the check found nothing to save)")
    for i, trace in enumerate(traces):
        if not isinstance(trace, dict) or trace.get("format") != TRACE_FORMAT:
            found = trace.get("format") if isinstance(trace, dict) else type(trace).__name__
            raise SpecError(f"--trace {path}: trace {i + 1} is not in the format {TRACE_FORMAT} "
                            f"that `atmostonce check --out` writes (found {found!r})")
    names = tuple(str(t.get("property")) for t in traces)
    index = 0
    if name is not None:
        if name not in names:
            raise SpecError(f"--name {name}: no trace of that name in {path} (it holds "
                            f"{', '.join(names)})")
        index = names.index(name)
    trace = traces[index]
    where = f"--trace {path}: trace {names[index]}"
    actions = trace.get("steps")
    if not isinstance(actions, list) or not all(isinstance(a, dict) for a in actions):
        raise SpecError(f"{where}: its steps must be a list of objects")
    return LoadedTrace(str(path), names[index], str(trace.get("kind", "trace")),
                       str(trace.get("message", "")), config_of(trace.get("config"), where),
                       tuple(actions), index, names)


def config_of(data: object, where: str) -> ModelConfig:
    """The model's bounds as `atmostonce.model.trace.config_json` wrote them."""
    if not isinstance(data, dict):
        raise SpecError(f"{where}: its config must be an object")
    values: dict[str, Any] = {}
    try:
        for key in _INTEGERS:
            if key in data:
                values[key] = data[key]
        tools = data.get("tools")
        if tools is not None:
            if not isinstance(tools, list):
                raise SpecError("tools must be a list of names")
            values["tools"] = tuple(parse_tool(t) for t in tools)
        for key in ("fence", "reconcile_cancelled", "hints_may_lower", "cancel_records_failed"):
            if key in data:
                values[key] = data[key]
        for key in ("ledger", "mutant"):
            if data.get(key) is not None:
                values[key] = data[key]
        if data.get("session_default") is not None:
            values["session_default"] = EffectClass.parse(data["session_default"])
        config = ModelConfig(**values)
        choices_for(config)
    except (SpecError, TypeError) as error:
        raise SpecError(f"{where}: bad config: {error}") from None
    return config


def plan(trace: LoadedTrace) -> tuple[System, list[PlannedStep]]:
    """The trace's model and its steps on it (the states are that model's, whose calls are
    interned); SpecError at the first action the model does not allow."""
    system = System(trace.config, choices_for(trace.config))
    state = system.initial()
    steps: list[PlannedStep] = []
    for number, action in enumerate(trace.actions, start=1):
        for succ in system.successors(state):
            if action_json(system, state, succ.label) == action:
                text = describe_step(system, number, state, succ.label, succ.state).text
                steps.append(PlannedStep(number, succ.label, text, state, succ.state))
                state = succ.state
                break
        else:
            raise SpecError(f"--trace {trace.path}: trace {trace.name}, step {number} "
                            f"{json.dumps(action)} is not a step the model allows there")
    return system, steps


@dataclass(frozen=True)
class StepOutcome:
    number: int
    text: str
    verdict: str
    detail: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"step": self.number, "model": self.text, "verdict": self.verdict,
                "implementation": self.detail}


@dataclass
class Replay:
    """What replaying one trace on one layer showed, step by step."""

    layer: str
    subject: str
    trace: LoadedTrace
    steps: list[StepOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(step.verdict != DIVERGED for step in self.steps)

    def tally(self) -> str:
        counts = Counter(step.verdict for step in self.steps)
        return ", ".join(f"{counts[v]} {v}" for v in (AGREE, DIVERGED, NOT_SCRIPTABLE,
                                                      NOT_REACHED) if counts[v])

    def as_json(self) -> dict[str, Any]:
        return {"layer": self.layer, "subject": self.subject, "trace": self.trace.name,
                "kind": self.trace.kind, "file": self.trace.path,
                "verdict": "agree" if self.ok else "diverged",
                "steps": [s.as_json() for s in self.steps], "notes": self.notes}

    def render(self) -> str:
        lines = [f"replay of the {self.trace.title()} on the {self.layer} ({self.subject})"]
        width = max([len(v) for v in (AGREE, DIVERGED, NOT_SCRIPTABLE, NOT_REACHED)])
        for step in self.steps:
            lines.append(f"  {step.number:>2}. {step.verdict:<{width}}  {step.text}")
            if step.detail:
                lines.append(f"      {'':<{width}}  {step.detail}")
        lines.extend(f"  note: {note}" for note in self.notes)
        verdict = "every step agrees" if self.ok and all(
            s.verdict == AGREE for s in self.steps) else \
            "no step diverged" if self.ok else "DIVERGED"
        lines.append(f"verdict: {verdict} ({self.tally()})")
        return "\n".join(lines)


class RecordingLockstep(Lockstep):
    """The conformance lockstep, keeping the commands the executor returned in a step."""

    def __init__(self, config: ModelConfig, factory: p.ExecutorFactory) -> None:
        self.commands: list[p.Command] = []
        super().__init__(config, factory, choices_for(config))

    def _took(self, commands: list[p.Command]) -> None:
        self.commands.extend(commands)
        super()._took(commands)

    def did(self) -> str:
        """What the executor shows and did in the step: each call's status, the services'
        effects, the commands it returned."""
        try:
            snapshot = self.executor.snapshot(SESSION)
            calls = "; ".join(f"{v.turn_id}/{v.tool_call_id} {v.status.value}"
                              + (f" ({v.error.split(';')[0]})" if v.error else "")
                              for v in snapshot.tool_calls) or "no calls"
        except Exception as error:  # an executor broken enough to fail its snapshot
            calls = f"no snapshot ({type(error).__name__}: {error})"
        effects = ", ".join(f"{t} {n}" for t, n in sorted(self.effects.items()) if n)
        return (f"executor: {calls}; effects: {effects or 'none'}; commands: "
                f"{describe_commands(self.commands)}")


def describe_commands(commands: list[p.Command]) -> str:
    """Commands in a line: each kind counted, go-aheads, cancels and records named."""
    if not commands:
        return "none"
    named: list[str] = []
    plain: Counter[str] = Counter()
    for c in commands:
        if isinstance(c, p.GoAhead):
            named.append(f"GoAhead({c.worker}, {c.attempt})")
        elif isinstance(c, p.Cancel):
            named.append(f"Cancel({c.worker}, {c.attempt})")
        elif isinstance(c, p.Publish):
            named.append(f"Publish({c.event.turn_id}/{c.event.tool_call_id} "
                         f"{c.event.status.value})")
        elif isinstance(c, p.StartTimer):
            named.append(f"StartTimer({c.kind.value})")
        else:
            plain[type(c).__name__] += 1
    return ", ".join([*named, *(f"{k}x{n}" if n > 1 else k for k, n in plain.items())])


def replay_core(trace: LoadedTrace, factory: p.ExecutorFactory, subject: str) -> Replay:
    """Replay `trace` on the executor `factory` makes, in lockstep with its model."""
    _, steps = plan(trace)
    replay = Replay("executor core", subject, trace)
    lock: RecordingLockstep | None = None
    try:
        lock = RecordingLockstep(trace.config, factory)
    except (Disagreement, guard.ProtocolBreach) as error:
        replay.notes.append(f"the executor failed before the first step: {error}")
    for step in steps:
        if lock is None:
            replay.steps.append(StepOutcome(step.number, step.text, NOT_REACHED))
            continue
        lock.commands.clear()
        verdict, detail = AGREE, ""
        try:
            lock.step(step.label)
            if lock.diverged:
                verdict = DIVERGED
                detail = "the executor handed out another queued attempt than the trace's " \
                         "(the model allows it, but the trace goes on from the one it names)"
        except Disagreement as error:
            verdict, detail = DIVERGED, str(error)
        except guard.ProtocolBreach as breach:
            verdict, detail = DIVERGED, f"the executor stepped outside the protocol: {breach}"
        done = lock.did()
        replay.steps.append(StepOutcome(step.number, step.text, verdict,
                                        done if verdict == AGREE else f"{detail}; {done}"))
        if verdict == DIVERGED:
            lock = None
    return replay
