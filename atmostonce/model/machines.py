"""The component machines of the model, as `transitions` definitions.

These definitions are the single source of the model's component behaviour: the explorer runs
on tables compiled from them (`tables`), the naive explorer drives the `transitions` machines
built from them directly, and `atmostonce diagrams` draws them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from transitions import Machine

from atmostonce.spec.policy import EffectClass, retries_allowed


@dataclass(frozen=True)
class Edge:
    """One trigger's move from each source to `dest`, taken only when every guard named in
    `conditions` holds and none in `unless` does (`atmostonce.model.guards`)."""

    trigger: str
    sources: tuple[str, ...]
    dest: str
    conditions: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()


@dataclass(frozen=True)
class MachineDef:
    """A component machine: its states (the first is initial), its edges and what it models."""

    name: str
    doc: str
    states: tuple[str, ...]
    edges: tuple[Edge, ...]
    effects: tuple[EffectClass, ...] = ()
    """The effect classes whose calls this machine runs; empty for a machine that is not a call."""

    @property
    def initial(self) -> str:
        return self.states[0]

    @property
    def terminal(self) -> tuple[str, ...]:
        """The states no edge leaves (an edge back to the same state does not count)."""
        leaving = {s for e in self.edges for s in e.sources if s != e.dest}
        return tuple(s for s in self.states if s not in leaving)

    @property
    def triggers(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for edge in self.edges:
            seen.setdefault(edge.trigger, None)
        return tuple(seen)

    def transitions(self, guarded: bool = False) -> list[dict[str, Any]]:
        """The edges in the form `transitions.Machine(transitions=...)` takes; with `guarded`,
        with their guards' names as conditions, for drawing (the explorer decides with the
        spec's table, which the guards are tested against, so its machines carry none)."""
        out: list[dict[str, Any]] = []
        for e in self.edges:
            t: dict[str, Any] = {"trigger": e.trigger, "source": list(e.sources), "dest": e.dest}
            if guarded and e.conditions:
                t["conditions"] = list(e.conditions)
            if guarded and e.unless:
                t["unless"] = list(e.unless)
            out.append(t)
        return out

    def build(self, model: object | None = None, initial: str | None = None) -> Machine:
        """A `transitions.Machine` for this definition, bound to `model` (or to itself)."""
        return Machine(
            model=model if model is not None else Machine.self_literal,
            states=list(self.states),
            transitions=self.transitions(),
            initial=initial or self.initial,
            auto_transitions=False,
            ignore_invalid_triggers=False,
        )


def _e(trigger: str, sources: str | Sequence[str], dest: str, when: Sequence[str] = (),
       unless: Sequence[str] = ()) -> Edge:
    return Edge(trigger, (sources,) if isinstance(sources, str) else tuple(sources), dest,
                tuple(when), tuple(unless))


_CALL_STATES = ("asked", "awaiting_approval", "attempting", "succeeded", "failed", "rejected",
                "outcome_unknown")

# What every call does, whichever Step runs it: approval when its policy snapshot asks for it
# (TC-APR-2, TC-APR-3), then attempts until one decides the record. Which record comes from the
# spec's `decide`; the guards restate it edge by edge (tests/model/test_guards.py).
_APPROVAL_EDGES = (
    _e("needs_approval", "asked", "awaiting_approval", when=["requires_approval"]),
    _e("start", "asked", "attempting", unless=["requires_approval"]),
    _e("approve", "awaiting_approval", "attempting"),
    _e("reject", "awaiting_approval", "rejected"),
    _e("deadline", "awaiting_approval", "rejected"),
    _e("returned", "attempting", "succeeded", when=["tool_returned"]),
    _e("tool_failed", "attempting", "failed", when=["tool_reported_failure"]),
)

# TC-REC-1, TC-REC-RETRY: CallTool runs a read or an idempotent write, with retries.
CALL_TOOL = MachineDef(
    "CallTool",
    "A call of a read or an idempotent write: approval if its policy asks for it, then "
    "attempts until one decides the record (TC-EFF-READ, TC-EFF-IDEM, TC-REC-RETRY).",
    _CALL_STATES,
    (
        *_APPROVAL_EDGES,
        _e("did_not_run", "attempting", "failed", unless=["reached", "attempts_left"]),
        _e("may_still_run", "attempting", "failed", when=["read", "cancelled"],
           unless=["attempts_left"]),
        _e("unknown", "attempting", "outcome_unknown",
           when=["idempotent_write", "reached", "infra_failure"], unless=["attempts_left"]),
        _e("retry", "attempting", "attempting", when=["infra_failure", "attempts_left"]),
        _e("may_have_run", "attempting", "failed", when=["read", "reached", "lost_or_unreached"],
           unless=["attempts_left"]),
    ),
    tuple(e for e in EffectClass if retries_allowed(e)),
)

# TC-AMO-1, TC-EFF-NONIDEM, TC-EFF-UNCL: one attempt, so there is no retry edge at all.
CALL_SINGLE_ATTEMPT_TOOL = MachineDef(
    "CallSingleAttemptTool",
    "A call of a non-idempotent write or an unclassified tool: approval if its policy asks "
    "for it, then exactly one attempt (TC-EFF-NONIDEM, TC-EFF-UNCL, TC-AMO-1).",
    _CALL_STATES,
    (
        *_APPROVAL_EDGES,
        _e("did_not_run", "attempting", "failed", unless=["reached"]),
        _e("may_still_run", "attempting", "failed", when=["cancel_records_failed"]),
        _e("unknown", "attempting", "outcome_unknown", when=["reached", "infra_failure"],
           unless=["cancel_records_failed"]),
    ),
    tuple(e for e in EffectClass if not retries_allowed(e)),
)

# D-5: an attempt counts as reached from `hand` on, which the server records before the go-ahead.
ATTEMPT = MachineDef(
    "Attempt",
    "One attempt of a call: queued, handed to one worker (durably recorded before the "
    "go-ahead, D-5), started when the worker got the go-ahead, running once its first "
    "heartbeat reached the server, then ended (TC-REC-LOST: it may have run before that).",
    ("none", "queued", "handed", "started", "running", "returned", "tool_failed", "lost",
     "cancelled", "not_reached"),
    (
        _e("schedule", "none", "queued"),
        _e("hand", "queued", "handed", when=["worker_up"], unless=["worker_busy", "fenced"]),
        _e("go", "handed", "started", when=["worker_up"]),
        _e("heartbeat", "started", "running", when=["worker_up"]),
        _e("return_result", ("started", "running"), "returned"),
        _e("report_failure", ("started", "running"), "tool_failed"),
        _e("lose", ("handed", "started", "running"), "lost"),
        _e("time_out", ("started", "running"), "cancelled"),
        _e("expire", "queued", "not_reached"),
        _e("reset", ("returned", "tool_failed", "lost", "cancelled", "not_reached"), "none"),
    ),
)

# D-12: `detect` is the server's heartbeat timeout; by then a cut-off worker stopped its runs.
WORKER = MachineDef(
    "Worker",
    "A worker process and its connection, as the server sees it after the fact: up, cut off, "
    "crashed, then declared lost by the heartbeat timeout and back as a fresh worker (D-12).",
    ("up", "disconnected", "crashed", "down"),
    (
        _e("disconnect", "up", "disconnected"),
        _e("reconnect", "disconnected", "up"),
        _e("crash", ("up", "disconnected"), "crashed"),
        _e("detect", ("disconnected", "crashed"), "down"),
        _e("rejoin", "down", "up"),
        _e("server_restart", ("up", "disconnected"), "disconnected"),
        _e("server_restart", "crashed", "crashed"),
        _e("server_restart", "down", "down"),
    ),
)

# TC-AMO-3: a cancel changes nothing in the run; only a crash or the worker's lease stops it.
RUN = MachineDef(
    "Run",
    "The tool's code running on a worker: a write applies its effect (a read has none), then "
    "the tool returns or reports a failure; a cut-off worker holds the result until it "
    "reconnects. Cancellation is cooperative, so `cancel` leaves the run as it was (TC-AMO-3).",
    ("started", "applied", "held_ok", "held_failure", "finished", "killed"),
    (
        _e("apply", "started", "applied"),
        _e("finish_ok", ("started", "applied"), "finished"),
        _e("finish_fail", ("started", "applied"), "finished"),
        _e("hold_ok", ("started", "applied"), "held_ok"),
        _e("hold_fail", ("started", "applied"), "held_failure"),
        _e("deliver", ("held_ok", "held_failure"), "finished"),
        _e("cancel", "started", "started"),
        _e("cancel", "applied", "applied"),
        _e("cancel", "held_ok", "held_ok"),
        _e("cancel", "held_failure", "held_failure"),
        _e("kill", ("started", "applied", "held_ok", "held_failure"), "killed"),
    ),
)

# TC-EFF-IDEM, TC-KEY-3: a service that drops a repeated idempotency key applies it once.
KEYED_LEDGER = MachineDef(
    "KeyedLedger",
    "The effect ledger of a service that drops a repeated idempotency key: per key, the "
    "effect is applied at most once (TC-EFF-IDEM, TC-KEY-3).",
    ("empty", "applied"),
    (
        _e("write", ("empty", "applied"), "applied"),
    ),
)

PLAIN_LEDGER = MachineDef(
    "PlainLedger",
    "The effect ledger of a service without deduplication: every write applies its effect "
    "(counted up to two, which is all a property needs).",
    ("empty", "once", "twice"),
    (
        _e("write", "empty", "once"),
        _e("write", ("once", "twice"), "twice"),
    ),
)

ALL_MACHINES: tuple[MachineDef, ...] = (
    CALL_TOOL, CALL_SINGLE_ATTEMPT_TOOL, ATTEMPT, WORKER, RUN, KEYED_LEDGER, PLAIN_LEDGER,
)
