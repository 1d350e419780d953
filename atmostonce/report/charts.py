"""Model paths as message sequence charts: a counterexample or witness trace (the
`atmostonce-trace/1` JSON that `atmostonce check --out` writes) or a conformance schedule (the
steps `replay_schedules` logs, such as `hand(0, 1)`), replayed on the model so each step's
messages can say what it did: who asked, who was handed what, which results reached the
server, what the service applied, and which record each call got."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from atmostonce.model import layout as s
from atmostonce.model.check import choices_for
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import Label, State
from atmostonce.model.system import System
from atmostonce.model.trace import TRACE_FORMAT, action_json, config_from_json
from atmostonce.report.sequence import Message, sequence_svg
from atmostonce.spec.errors import SpecError
from atmostonce.spec.step_kinds import StepKind

AGENT, PEOPLE, EXECUTOR, LEDGER = "agent", "people", "executor", "ledger"
_PEOPLE_STEPS = (StepKind.APPROVE, StepKind.REJECT, StepKind.CHANGE_POLICY)


@dataclass(frozen=True)
class Chart:
    """A sequence chart's lanes (left to right), messages (in order) and title."""

    lanes: tuple[str, ...]
    messages: tuple[Message, ...]
    title: str

    def svg(self) -> str:
        return sequence_svg(self.lanes, self.messages, self.title)


def worker(w: int) -> str:
    return f"worker {w}"


def chart_of_trace(trace: Mapping[str, Any]) -> Chart:
    """The chart of one trace as `check --out` saves it; SpecError, one line, for a document
    that is not one or a step the model does not allow."""
    if not isinstance(trace, Mapping) or trace.get("format") != TRACE_FORMAT:
        raise SpecError(f"not an {TRACE_FORMAT} trace")
    config = config_from_json(trace.get("config"))
    steps = trace.get("steps")
    if not isinstance(steps, list):
        raise SpecError("a trace's steps must be a list")
    system = System(config, choices_for(config))
    state = system.initial()
    path: list[tuple[State, Label, State]] = []
    for number, step in enumerate(steps, start=1):
        succ = next((t for t in system.successors(state)
                     if action_json(system, state, t.label) == step), None)
        if succ is None:
            raise SpecError(f"trace step {number} ({step!r}) is not a step the model allows")
        path.append((state, succ.label, succ.state))
        state = succ.state
    what = f"{trace.get('kind', 'trace')} of {trace.get('property', '?')}"
    message = trace.get("message")
    return _chart(system, path, f"{what}: {message}" if message else what)


_STEP = re.compile(r"^([a-z_]+)(?:\((-?\d+)(?:, (-?\d+))?\))?$")


def parse_schedule(schedule: Sequence[str]) -> list[Label]:
    """Labels from a conformance log, `kind`, `kind(a)` or `kind(a, b)` per step."""
    labels: list[Label] = []
    for text in schedule:
        match = _STEP.match(text)
        if match is None:
            raise SpecError(f"not a schedule step: {text!r}")
        kind, a, b = match.groups()
        labels.append((kind, int(a) if a else -1, int(b) if b else -1))
    return labels


def chart_of_schedule(config: ModelConfig, schedule: Sequence[str], title: str,
                      executor_did: str = "") -> Chart:
    """The chart of a conformance schedule on `config`'s model, as far as the model allows it
    (a disagreement's log ends with the step the executor got wrong, which the model takes);
    `executor_did`, what the executor returned at that last step, is drawn beside the model's
    messages of the step, as a note on the executor's lifeline."""
    system = System(config, choices_for(config))
    state = system.initial()
    path: list[tuple[State, Label, State]] = []
    for number, label in enumerate(parse_schedule(schedule), start=1):
        succ = next((t for t in system.successors(state) if t.label == label), None)
        if succ is None:
            raise SpecError(f"schedule step {number} ({schedule[number - 1]}) is not a step "
                            "the model allows")
        path.append((state, label, succ.state))
        state = succ.state
    chart = _chart(system, path, title)
    if not executor_did:
        return chart
    note = Message(EXECUTOR, EXECUTOR, f"the executor instead: {executor_did}",
                   float(len(path)))
    return Chart(chart.lanes, (*chart.messages, note), title)


def _chart(system: System, path: Sequence[tuple[State, Label, State]], title: str) -> Chart:
    messages: list[Message] = []
    for number, (before, label, after) in enumerate(path, start=1):
        messages.extend(step_messages(system, before, label, after, float(number)))
    people = any(PEOPLE in (m.sender, m.receiver) for m in messages)
    lanes = (AGENT, *((PEOPLE,) if people else ()), EXECUTOR,
             *(worker(w) for w in range(system.workers)), LEDGER)
    return Chart(lanes, tuple(messages), title)


def _tool(system: System, c: tuple[int, ...]) -> str:
    return system.config.tools[c[s.T]].name


def _record(c: tuple[int, ...]) -> str | None:
    record = s.RECORD_OF_STATE.get(c[s.CS])
    if record is None:
        return None
    failure = f" ({s.FAILURE_OF_INDEX[c[s.FK]].value})" if c[s.FK] else ""
    return record.value + failure


def step_messages(system: System, before: State, label: Label, after: State,
                  time: float | None = None) -> list[Message]:
    """The messages of one model step, then the record each call newly got (to the agent)."""
    kind, a, b = label
    calls0, calls1 = system.calls_of(before), system.calls_of(after)
    ws0 = before[s.NG: s.NG + system.workers]
    out: list[Message] = []

    def say(sender: str, receiver: str, text: str) -> None:
        out.append(Message(sender, receiver, text, time))

    if kind in (StepKind.ASK, StepKind.REASK):
        new = len(calls0)
        again = " again" if kind == StepKind.REASK else ""
        say(AGENT, EXECUTOR, f"ask {_tool(system, calls1[new])}{again} (call {new})")
        if calls1[new][s.CS] == s.C_AWAIT:
            say(EXECUTOR, PEOPLE, f"call {new} needs approval")
    elif kind == StepKind.CHANGE_POLICY:
        say(PEOPLE, EXECUTOR, f"developer changes the policy of {system.config.tools[a].name}")
    elif kind in (StepKind.APPROVE, StepKind.REJECT):
        say(PEOPLE, EXECUTOR, f"{kind} call {a}")
    elif kind == StepKind.DEADLINE:
        say(EXECUTOR, EXECUTOR, f"call {a}: approval deadline passes")
    elif kind == StepKind.EXPIRE:
        say(EXECUTOR, EXECUTOR, f"call {a}: attempt {calls0[a][s.NATT]} expires in the queue")
    elif kind == StepKind.HAND:
        n = calls0[a][s.NATT]
        say(EXECUTOR, EXECUTOR, f"journal: call {a} attempt {n} handed to worker {b}")
        say(EXECUTOR, worker(b), f"go-ahead: call {a} attempt {n}")
    elif kind == StepKind.GO:
        say(worker(b), worker(b), f"starts call {a}'s tool")
    elif kind == StepKind.HEARTBEAT:
        say(worker(b), EXECUTOR, f"heartbeat: call {a}")
    elif kind == StepKind.TIME_OUT:
        say(EXECUTOR, worker(b), f"cancel call {a} (timed out)")
    elif kind == StepKind.APPLY:
        dropped = calls0[a][s.EFF] != 0 and calls1[a][s.EFF] == calls0[a][s.EFF]
        say(worker(b), LEDGER, f"write call {a}'s effect"
            + (" (repeated key: dropped)" if dropped else ""))
    elif kind in (StepKind.FINISH_OK, StepKind.FINISH_FAIL):
        what = "tool returned" if kind == StepKind.FINISH_OK else "tool reported a failure"
        if ws0[b] == s.W_UP:
            say(worker(b), EXECUTOR, f"call {a}: {what}")
        else:
            say(worker(b), worker(b), f"call {a}: {what}; result held (cut off)")
    elif kind in (StepKind.CRASH, StepKind.DISCONNECT):
        say(worker(a), worker(a), "crashes" if kind == StepKind.CRASH else "loses its connection")
    elif kind in (StepKind.RECONNECT, StepKind.REJOIN):
        say(worker(a), EXECUTOR, "reconnects" if kind == StepKind.RECONNECT else
            "rejoins as a fresh worker")
    elif kind == StepKind.DETECT:
        say(EXECUTOR, EXECUTOR, f"heartbeat timeout: worker {a} lost")
    elif kind == StepKind.RESTART:
        say(EXECUTOR, EXECUTOR, "server restarts; every connection drops")
    elif kind in (StepKind.RECONCILE, StepKind.RECONCILE_CRASH):
        for i, (c0, c1) in enumerate(zip(calls0, calls1, strict=True)):
            if c1[s.REP] > c0[s.REP]:
                ran = "did not run" if c1[s.G] & s.G_HISTORY_NOT_RUN else "outcome unknown"
                say(EXECUTOR, AGENT, f"reconcile reports call {i}: {ran}")
        if kind == StepKind.RECONCILE_CRASH:
            say(EXECUTOR, EXECUTOR, "reconcile job crashes before its send returns")
    else:  # pragma: no cover - every kind the model has is handled above
        raise SpecError(f"no chart wording for model step {kind!r}")
    for i, c1 in enumerate(calls1):
        if i < len(calls0) and 0 < calls0[i][s.NATT] < c1[s.NATT]:
            say(EXECUTOR, EXECUTOR, f"call {i}: retry, attempt {c1[s.NATT]} queued")
        record = _record(c1)
        old = _record(calls0[i]) if i < len(calls0) else None
        if record is not None and record != old:
            changed = f" (was {old})" if old else ""
            say(EXECUTOR, AGENT, f"call {i}: {record}{changed}")
    return out
