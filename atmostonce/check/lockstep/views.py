"""What the lockstep (`atmostonce.check.lockstep.conformance.Lockstep`) compares of each call beyond
its status: the effect class and approval rule it kept at ask time (TC-SNAP-1), its approval
deadline and the timer that keeps it (D-32), and its attempt history (D-30), each against the
model's call. An executor must show them: the session API leaves them unset only for an
engine judged from outside (`atmostonce.engines`), which conformance never replays.
"""

from __future__ import annotations

from atmostonce.model import layout as m
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import Call
from atmostonce.model.system import System
from atmostonce.spec import protocol as p
from atmostonce.spec.policy import choose_deadline
from atmostonce.spec.session import ToolCallView

_STARTED_SEEN = (m.A_RUNNING,)
"""The attempt states in which the worker's Started has reached the executor."""


def policy_problem(system: System, config: ModelConfig, setting: float, c: Call,
                   view: ToolCallView) -> str | None:
    """How the kept policy and deadline the view shows differ from the model's, or None."""
    truth = system.truth[c[m.T]][c[m.GPOL]]
    if view.effect is None or view.requires_approval is None:
        return ("shows no kept effect class or approval rule: every call shows the policy it "
                "kept at ask time (TC-SNAP-1)")
    if view.effect is not truth.effect:
        return (f"shows the kept effect class {view.effect.value}, the model "
                f"{truth.effect.value} (TC-SNAP-1)")
    if view.requires_approval != truth.requires_approval:
        return (f"shows requires_approval={view.requires_approval}, the model "
                f"{truth.requires_approval} (TC-SNAP-1)")
    expected = kept_deadline(config, setting, c) if truth.requires_approval else None
    if view.approval_deadline != expected:
        return f"shows the approval deadline {view.approval_deadline}, the model {expected} (D-32)"
    return None


def kept_deadline(config: ModelConfig, setting: float, c: Call) -> float:
    """The deadline the model's call kept: its ask-time policy's, else the setting (D-32)."""
    return choose_deadline(None, config.tools[c[m.T]].deadline(bool(c[m.GPOL])), setting)


def timer_problem(timers: dict[str, p.StartTimer], started: dict[str, float], asked: float,
                  key: str, deadline: float) -> str | None:
    """How the approval timer of a waiting call misses its kept deadline, or None: it must
    fire `deadline` seconds after the ask, also when a restart started it again (D-32)."""
    for timer, start in timers.items():
        if start.kind is not p.TimerKind.APPROVAL_DEADLINE:
            continue
        if start.subject != key and start.key != key:
            continue
        due = started[timer] + start.delay
        if abs(due - (asked + deadline)) > 1e-6:
            return (f"its approval timer fires {due - asked:g} s after the ask, but the call "
                    f"kept a deadline of {deadline:g} s (D-32)")
        return None
    return None


def history_problem(c: Call, view: ToolCallView, judge_started: bool = True) -> str | None:
    """How the attempt history the view shows differs from the model's call, or None: one
    attempt per attempt made, hand-outs as the model counts them, the live attempt handed out
    and started as the model says, and the last ended one ended the model's way (D-30). Without
    `judge_started` the live attempt's Started is not judged: a real worker sends it the moment
    its go-ahead arrives, which the model's later heartbeat step stands for."""
    if not view.history:
        return ("shows no attempt history: every call shows its attempts, the Flow's history "
                "(D-30)")
    attempts = view.attempts
    if len(attempts) != c[m.NATT]:
        return f"shows {len(attempts)} attempt(s) in its history, the model {c[m.NATT]}"
    handed = sum(1 for a in attempts if a.reached)
    if handed != m.hands(c[m.G]):
        return (f"shows {handed} attempt(s) handed to a worker in its history, the model "
                f"{m.hands(c[m.G])}")
    if not attempts:
        return None
    last = attempts[-1]
    live = c[m.AS] != m.A_NONE
    if live != (last.end is None):
        state = "live" if live else "ended"
        return f"shows its last attempt {'ended' if last.end else 'live'}, the model {state}"
    if live:
        if (last.handed_at is not None) != (c[m.AS] in m.A_OUT):
            return "shows its live attempt handed out" if last.handed_at is not None else \
                "shows its live attempt not handed out, though the model handed it"
        if judge_started and (last.started_at is not None) != (c[m.AS] in _STARTED_SEEN):
            seen = "shows" if last.started_at is not None else "does not show"
            return f"{seen} the Started of its live attempt, unlike the model"
        return None
    end = m.SPEC_END.get(m.last_end(c[m.G]))
    if end is not None and last.end is not end:
        return (f"shows its last attempt ended {last.end.value if last.end else None}, the "
                f"model {end.value}")
    return None
