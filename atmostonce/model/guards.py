"""The guards of the machines' edges: named predicates over what a call knows when its machine
picks an edge, so the definitions say (and the diagrams show) why an edge is taken.

The explorer decides with the table compiled from the spec's `decide` (`choices`) and with its
own tests of the workers' states (`call_steps`); the guards say the same thing edge by edge, and
`tests/model/test_guards.py` proves that for every situation exactly one call edge's guard holds
and it is the one that table picks, and that the attempt's edges are taken in exactly the
states of the explored model where their guards hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import AttemptEnd


@dataclass(frozen=True)
class Situation:
    """What a call's guards read: its effect class and whether it waits for approval (from its
    policy snapshot), and once an attempt ended, how it ended, whether attempts remain and
    whether an earlier attempt of the call reached a worker, and the executor's declared choice
    of D-4; for its attempt, the Worker machine's state of the worker in question, whether that
    worker already holds work, and whether the fence holds the call back."""

    effect: EffectClass
    requires_approval: bool = False
    end: AttemptEnd | None = None
    attempts_left: bool = False
    reached_before: bool = False
    cancel_records_failed: bool = False
    worker: str | None = None
    worker_busy: bool = False
    fenced: bool = False


_INFRA = (AttemptEnd.NOT_REACHED, AttemptEnd.WORKER_LOST, AttemptEnd.CANCELLED)
_SILENT = (AttemptEnd.NOT_REACHED, AttemptEnd.WORKER_LOST)


@dataclass(frozen=True)
class Guard:
    """A named condition: what it means in words, and the predicate itself."""

    name: str
    text: str
    holds: Callable[[Situation], bool]


def _reached(s: Situation) -> bool:
    return s.reached_before or (s.end is not None and s.end.reached_worker)


GUARDS: Mapping[str, Guard] = {g.name: g for g in (
    Guard("requires_approval",
          "the call's policy snapshot requires approval (TC-APR-2, TC-APR-3, TC-SNAP-1)",
          lambda s: s.requires_approval),
    Guard("read", "the tool is a read", lambda s: s.effect is EffectClass.READ),
    Guard("idempotent_write", "the tool is an idempotent write",
          lambda s: s.effect is EffectClass.IDEMPOTENT_WRITE),
    Guard("attempts_left", "the call has attempts left (CallTool's max attempts)",
          lambda s: s.attempts_left),
    Guard("reached", "some attempt of the call reached a worker (D-5)", _reached),
    Guard("tool_returned", "the tool returned a result", lambda s: s.end is AttemptEnd.RETURNED),
    Guard("tool_reported_failure", "the tool itself reported a failure (D-3)",
          lambda s: s.end is AttemptEnd.TOOL_FAILED),
    Guard("infra_failure", "the attempt never reached a worker, its worker was lost, or it "
          "was cancelled (TC-REC-RETRY)", lambda s: s.end in _INFRA),
    Guard("lost_or_unreached", "the attempt's worker was lost, or it never reached one",
          lambda s: s.end in _SILENT),
    Guard("cancelled", "the attempt was cancelled (timed out) after it was handed out (D-4)",
          lambda s: s.end is AttemptEnd.CANCELLED),
    Guard("cancel_records_failed", "the attempt was cancelled (timed out) after it was handed "
          "out, and the executor declares D-4's other choice: failed, the tool may still be "
          "running (F-7)", lambda s: s.end is AttemptEnd.CANCELLED and s.cancel_records_failed),
    Guard("worker_up", "the worker is up and connected (Worker machine: up)",
          lambda s: s.worker == "up"),
    Guard("worker_busy", "the worker holds a handed-out attempt or a run",
          lambda s: s.worker_busy),
    Guard("fenced", "the fence is on and a run of the same single-attempt tool may still be "
          "going (D-6)", lambda s: s.fenced),
)}


def holds(conditions: tuple[str, ...], unless: tuple[str, ...], situation: Situation) -> bool:
    """Whether every condition holds and no `unless` does; a KeyError names an unknown guard."""
    return (all(GUARDS[c].holds(situation) for c in conditions)
            and not any(GUARDS[u].holds(situation) for u in unless))
