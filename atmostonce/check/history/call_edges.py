"""The call machines' edges a recorded history took, read off the checker's calls.

Each call starts with `start` or `needs_approval`, its approval ends with `approve`, `reject` or
`deadline`, every attempt after its first is a `retry`, and its record (with the failed record's
error naming which failure it is) is the edge into that record. The simulator and the chaos
harness judge histories with the same checker, so both layers count alike. The Attempt, Worker,
Run and ledger machines are not read off here: see `NOT_FROM_HISTORY`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from atmostonce.check.history.state import Call
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.records import FailureKind, failure_kind
from atmostonce.spec.session import ToolCallStatus

EdgeKey = tuple[str, str, str, str]
"""(machine, source state, trigger, destination state)."""

NOT_FROM_HISTORY = (
    "a history names hand-outs, starts, results and faults, but not the server's view of each "
    "attempt, worker and run at every step (a hand-out lost in a restart, a result held by a "
    "cut-off worker), so mapping it onto these machines' edges would be a guess"
)
"""Why the simulation and chaos layers do not count the Attempt, Worker, Run and ledger
machines."""

_FAILED = {
    FailureKind.DID_NOT_RUN: "did_not_run",
    FailureKind.TOOL_ERROR: "tool_failed",
    FailureKind.MAY_HAVE_RUN: "may_have_run",
    FailureKind.MAY_STILL_BE_RUNNING: "may_still_run",
}
_RECORD_EDGE = {
    ToolCallStatus.SUCCEEDED: ("returned", "succeeded"),
    ToolCallStatus.OUTCOME_UNKNOWN: ("unknown", "outcome_unknown"),
}


@dataclass(frozen=True)
class CallEdges:
    """Edge counts per (machine, source, trigger, destination), and the records whose error
    names no failure kind (counted apart: the checkers judge those)."""

    counts: tuple[tuple[EdgeKey, int], ...]
    unnamed_failures: int = 0


def call_edges(calls: Iterable[Call]) -> CallEdges:
    counts: dict[EdgeKey, int] = {}
    unnamed = 0

    def take(machine: str, source: str, trigger: str, dest: str, n: int = 1) -> None:
        key = (machine, source, trigger, dest)
        counts[key] = counts.get(key, 0) + n

    for c in calls:
        machine = "CallSingleAttemptTool" if c.single else "CallTool"
        record = c.record
        attempting = True
        if c.policy.requires_approval:
            take(machine, "asked", "needs_approval", "awaiting_approval")
            if c.approval is ApprovalState.APPROVED:
                take(machine, "awaiting_approval", "approve", "attempting")
            else:
                attempting = False
                if record is ToolCallStatus.REJECTED:
                    trigger = "deadline" if c.approval is ApprovalState.EXPIRED else "reject"
                    take(machine, "awaiting_approval", trigger, "rejected")
        else:
            take(machine, "asked", "start", "attempting")
        if not attempting:
            continue
        if len(c.attempts) > 1:
            take(machine, "attempting", "retry", "attempting", len(c.attempts) - 1)
        if record is ToolCallStatus.FAILED:
            kind = failure_kind(c.record_error)
            if kind is None:
                unnamed += 1
            else:
                take(machine, "attempting", _FAILED[kind], "failed")
        elif record in _RECORD_EDGE:
            trigger, dest = _RECORD_EDGE[record]
            take(machine, "attempting", trigger, dest)
    return CallEdges(tuple(sorted(counts.items())), unnamed)


NO_EDGES = CallEdges(())
"""A run whose calls were not read off (the default of `RunStats.taken`)."""
