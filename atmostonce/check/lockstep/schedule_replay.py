"""One schedule of model steps, as the conformance layer prints it, replayed on an executor step
by step in lockstep with the model: `atmostonce replay --schedule "..." --executor M:F`.

The notation is the lockstep's log (`Lockstep._describe`): steps joined by ` -> `, each `KIND`,
`KIND(A)` or `KIND(A, B)`. `parse` reads it back into labels, `walk` refuses a schedule the
model does not allow (bad input), `replay` drives the executor and says after each step what
the model did and which commands the executor returned, up to the first disagreement, and
`command` is the line that reruns a schedule, which every disagreement of the conformance layer
prints.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from atmostonce.check.executors import guard
from atmostonce.check.lockstep.state import Disagreement
from atmostonce.check.lockstep.trace_replay import RecordingLockstep
from atmostonce.model.check import choices_for
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import Label
from atmostonce.model.system import System
from atmostonce.model.trace import describe_step
from atmostonce.spec import protocol as p
from atmostonce.spec.errors import SpecError
from atmostonce.spec.step_kinds import StepKind

SEPARATOR = " -> "
KINDS = tuple(sorted(value for name, value in vars(StepKind).items()
                     if name.isupper() and isinstance(value, str)))
"""Every step kind the notation knows."""

_STEP = re.compile(r"^([a-z_]+)(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$")


def notation(config: ModelConfig) -> list[str]:
    """The lines that explain the notation, printed before any schedule: what a step looks
    like, what its numbers name, and the tools of `config` by number."""
    tools = ", ".join(f"{i} {tool.name}" for i, tool in enumerate(config.tools))
    return [
        "schedule notation: the model's steps in order, joined by '->'; each is KIND, "
        "KIND(N) or KIND(CALL, WORKER)",
        "  ask(N) and change_policy(N) name tool N; crash, disconnect, reconnect, detect and "
        "rejoin(N) name worker N; every other KIND(N, ...) names call N (calls are numbered "
        "from 0 in the order they were asked), then worker N",
        f"  tools: {tools}; workers: {', '.join(str(w) for w in range(config.workers))}",
        "  `atmostonce replay --schedule \"...\" --executor MODULE:FACTORY` replays one, each "
        "step with the model's sentence and the executor's commands beside it",
    ]


def text(labels: list[Label] | list[str]) -> str:
    """A schedule in the notation; its steps as labels or as the lockstep logs them."""
    return SEPARATOR.join(step if isinstance(step, str) else _step_text(step) for step in labels)


def _step_text(label: Label) -> str:
    kind, a, b = label
    return f"{kind}({a}, {b})" if b >= 0 else f"{kind}({a})" if a >= 0 else kind


def parse(schedule: str) -> list[Label]:
    """The labels of a schedule in the notation; SpecError, one line, naming the first step
    that is not KIND, KIND(N) or KIND(N, M) with a known KIND."""
    if not schedule.strip():
        raise SpecError("--schedule is empty: give steps such as \"ask(1) -> hand(0, 0)\"")
    labels: list[Label] = []
    for number, step in enumerate(schedule.split("->"), start=1):
        found = _STEP.match(step.strip())
        if found is None:
            raise SpecError(f"--schedule: step {number} {step.strip()!r} is not KIND, KIND(N) "
                            "or KIND(N, M)")
        kind, a, b = found.groups()
        if kind not in KINDS:
            raise SpecError(f"--schedule: step {number} {step.strip()!r}: unknown step kind "
                            f"{kind!r} (known: {', '.join(KINDS)})")
        labels.append((kind, -1 if a is None else int(a), -1 if b is None else int(b)))
    return labels


def walk(config: ModelConfig, labels: list[Label]) -> None:
    """SpecError at the first step the model of `config` does not allow where it comes."""
    system = System(config, choices_for(config))
    state = system.initial()
    for number, label in enumerate(labels, start=1):
        after = next((s.state for s in system.successors(state) if s.label == label), None)
        if after is None:
            allowed = ", ".join(_step_text(s.label) for s in system.successors(state))
            raise SpecError(f"--schedule: step {number} {_step_text(label)} is not a step the "
                            f"model allows there (it allows: {allowed or 'nothing'})")
        state = after


def command(path: str, config: ModelConfig, steps: list[Label] | list[str]) -> str:
    """The command line that replays `steps` on the executor at `path` under `config`'s
    choices (the fence, the choice of what a cancel records)."""
    line = f"atmostonce replay --schedule {shlex.quote(text(steps))} --executor {path}"
    if config.fence:
        line += " --fence"
    if config.cancel_records_failed:
        line += " --cancel-records-failed"
    return line


AGREE = "agree"
DISAGREES = "DISAGREES"
NOT_REACHED = "not reached"


@dataclass(frozen=True)
class StepShown:
    """One step of the replay: its notation, the model's sentence, the verdict, and what the
    executor showed and returned (or the disagreement)."""

    number: int
    step: str
    model: str
    verdict: str
    executor: str = ""


@dataclass
class ScheduleReplay:
    """What replaying one schedule on one executor showed."""

    subject: str
    config: ModelConfig
    schedule: str
    setup: str = ""
    """What the executor returned while the harness set it up (policies, session, workers)."""
    steps: list[StepShown] = field(default_factory=list)
    problem: str = ""
    note: str = ""
    """Why the replay stopped early without a disagreement, if it did."""

    @property
    def ok(self) -> bool:
        return not self.problem

    def as_json(self) -> dict[str, object]:
        return {"executor": self.subject, "schedule": self.schedule,
                "fence": self.config.fence,
                "cancel_records_failed": self.config.cancel_records_failed,
                "verdict": "agree" if self.ok else "disagrees", "problem": self.problem,
                "note": self.note, "setup": self.setup,
                "steps": [{"step": s.number, "notation": s.step, "model": s.model,
                           "verdict": s.verdict, "executor": s.executor} for s in self.steps]}

    def render(self) -> str:
        choices = f"fence {'on' if self.config.fence else 'off'}" + (
            ", D-4's other choice (a cancel records failed)"
            if self.config.cancel_records_failed else "")
        lines = [*notation(self.config),
                 f"replay of {len(self.steps)} steps on {self.subject} ({choices}): "
                 f"{self.schedule}",
                 ]
        width = len(NOT_REACHED)
        lines.append(f"   0. {'setup':<{width}}  {'':<16} {self.setup}")
        for shown in self.steps:
            lines.append(f"  {shown.number:>2}. {shown.verdict:<{width}}  {shown.step:<16} "
                         f"{shown.model}")
            if shown.executor:
                lines.append(f"      {'':<{width}}  {'':<16} {shown.executor}")
        if self.note:
            lines.append(f"note: {self.note}")
        agreed = sum(1 for shown in self.steps if shown.verdict == AGREE)
        if self.ok:
            lines.append(f"verdict: every step agrees ({agreed} steps)" if agreed == len(
                self.steps) else f"verdict: no disagreement ({agreed} of {len(self.steps)} "
                "steps replayed)")
        else:
            lines.append(f"verdict: DISAGREES: {self.problem}")
        return "\n".join(lines)


def replay(config: ModelConfig, factory: p.ExecutorFactory, subject: str,
           labels: list[Label]) -> ScheduleReplay:
    """Replay `labels` (which `walk` allowed) on a fresh executor in lockstep with the model
    of `config`, up to the first disagreement or breach of the protocol."""
    shown = ScheduleReplay(subject, config, text(labels))
    lock: RecordingLockstep | None = None
    try:
        lock = RecordingLockstep(config, factory)
        shown.setup = lock.did()
    except (Disagreement, guard.ProtocolBreach) as error:
        shown.problem = f"the executor failed while it was set up: {error}"
        shown.setup = shown.problem
    for number, label in enumerate(labels, start=1):
        if lock is None:
            shown.steps.append(StepShown(number, _step_text(label), "", NOT_REACHED))
            continue
        before = lock.state
        lock.commands.clear()
        try:
            lock.step(label)
        except Disagreement as error:
            shown.problem = f"step {number} {_step_text(label)}: {error}"
        except guard.ProtocolBreach as breach:
            shown.problem = (f"step {number} {_step_text(label)}: the executor stepped outside "
                             f"the protocol: {breach}")
        sentence = describe_step(lock.system, number, before, label,
                                 lock.state if not shown.problem else before).text
        if shown.problem:
            shown.steps.append(StepShown(number, _step_text(label), sentence, DISAGREES,
                                         f"{shown.problem}; {lock.did()}"))
            lock = None
            continue
        shown.steps.append(StepShown(number, _step_text(label), sentence, AGREE, lock.did()))
        if lock.diverged:
            shown.note = (f"at step {number} the executor handed out another queued attempt "
                          "than the schedule names, which the model allows; the later steps "
                          "name the one the schedule chose, so the replay stops here")
            lock = None
    return shown
