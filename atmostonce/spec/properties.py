"""The properties every layer checks: stable ids, kind, a one-line statement, and their clauses.

The model checker evaluates them on states, the history checkers on recorded histories and the
effect ledger; both report violations by these ids.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from atmostonce.spec.clauses import FindingId
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import Record


class PropertyId:
    """The id of every property but the record witnesses (`record_witness_id`), each named
    after its id; code and tests name a property by these, never by its text."""

    A_ONE_WORKER: Final = "A-ONE-WORKER"
    A_ONE_ATTEMPT: Final = "A-ONE-ATTEMPT"
    A_NO_ATTEMPT_AFTER_UNKNOWN: Final = "A-NO-ATTEMPT-AFTER-UNKNOWN"
    A_ONE_RECORD: Final = "A-ONE-RECORD"
    A_DID_NOT_RUN_TRUE: Final = "A-DID-NOT-RUN-TRUE"
    A_SUCCEEDED_RETURNED: Final = "A-SUCCEEDED-RETURNED"
    A_UNKNOWN_REACHED: Final = "A-UNKNOWN-REACHED"
    A_EXHAUSTED_RECORD: Final = "A-EXHAUSTED-RECORD"
    A_RECORD_MEANING: Final = "A-RECORD-MEANING"
    A_RETRY_CLASSES: Final = "A-RETRY-CLASSES"
    A_SAME_KEY: Final = "A-SAME-KEY"
    A_APPROVAL: Final = "A-APPROVAL"
    A_POLICY_SNAPSHOT: Final = "A-POLICY-SNAPSHOT"
    A_DOUBLE_RUN_SHAPE: Final = "A-DOUBLE-RUN-SHAPE"
    A_TOOL_RESULT: Final = "A-TOOL-RESULT"
    A_CANCEL_ON_TIMEOUT: Final = "A-CANCEL-ON-TIMEOUT"
    A_FENCE: Final = "A-FENCE"
    A_HEARD_KEEPS_ATTEMPT: Final = "A-HEARD-KEEPS-ATTEMPT"
    S_DOUBLE_RUN: Final = "S-DOUBLE-RUN"
    S_READ_RETRY_AFTER_LOSS: Final = "S-READ-RETRY-AFTER-LOSS"
    S_LOST_BEFORE_HEARTBEAT: Final = "S-LOST-BEFORE-HEARTBEAT"
    S_UNKNOWN_NEVER_RAN: Final = "S-UNKNOWN-NEVER-RAN"
    E_EVERY_CALL_RECORDED: Final = "E-EVERY-CALL-RECORDED"
    E_RECONCILE_ONCE: Final = "E-RECONCILE-ONCE"


class Kind(enum.Enum):
    ALWAYS = "always"
    SOMETIMES = "sometimes"
    EVENTUALLY = "eventually"


@dataclass(frozen=True)
class Property:
    id: str
    kind: Kind
    summary: str
    clauses: tuple[str, ...]


def _always(pid: str, summary: str, *clauses: str) -> Property:
    return Property(pid, Kind.ALWAYS, summary, clauses)


def _sometimes(pid: str, summary: str, *clauses: str) -> Property:
    return Property(pid, Kind.SOMETIMES, summary, clauses)


def _eventually(pid: str, summary: str, *clauses: str) -> Property:
    return Property(pid, Kind.EVENTUALLY, summary, clauses)


# Which records each effect class can end with; a read never ends outcome_unknown.
RECORDS_ALLOWED: Mapping[EffectClass, tuple[Record, ...]] = {
    EffectClass.READ: (Record.SUCCEEDED, Record.FAILED, Record.REJECTED),
    EffectClass.IDEMPOTENT_WRITE: tuple(Record),
    EffectClass.NON_IDEMPOTENT_WRITE: tuple(Record),
    EffectClass.UNCLASSIFIED: tuple(Record),
}


RECORD_WITNESS_PREFIX: Final = "S-RECORD-"
"""How the id of every record witness begins."""


def record_witness_id(effect: EffectClass, record: Record) -> str:
    """The id of the sometimes-property that a call of `effect` ends with `record`."""
    return f"{RECORD_WITNESS_PREFIX}{effect.value}-{record.value}"


_RECORD_CLAUSE: Mapping[Record, str] = {
    Record.SUCCEEDED: "TC-REC-SUCC",
    Record.FAILED: "TC-REC-FAIL",
    Record.REJECTED: "TC-REC-REJ",
    Record.OUTCOME_UNKNOWN: "TC-REC-UNK",
}

_PROPERTIES: tuple[Property, ...] = (
    _always(PropertyId.A_ONE_WORKER, "an attempt is handed to one worker and never to another",
            "TC-AMO-1"),
    _always(PropertyId.A_ONE_ATTEMPT, "a single-attempt call gets at most one attempt",
            "TC-EFF-NONIDEM", "TC-EFF-UNCL", "TC-APR-4", "TC-AMO-1"),
    _always(PropertyId.A_NO_ATTEMPT_AFTER_UNKNOWN,
            "no attempt starts after a call recorded outcome_unknown",
            "TC-REC-EXHAUST-OTHER", "TC-AMO-2", "TC-RCN-1"),
    _always(PropertyId.A_ONE_RECORD, "a call ends with exactly one record, which never changes",
            "TC-REC-1"),
    _always(PropertyId.A_DID_NOT_RUN_TRUE,
            "the safe-to-call-again wording appears only when no attempt reached a worker and "
            "the ledger shows no run", "TC-REC-NOTRUN", "TC-REC-FAIL", "D-5"),
    _always(PropertyId.A_SUCCEEDED_RETURNED, "succeeded only when the tool returned a result",
            "TC-REC-SUCC"),
    _always(PropertyId.A_UNKNOWN_REACHED, "outcome_unknown only after an attempt reached a worker",
            "TC-REC-UNK", "TC-REC-LOST", "D-5"),
    _always(PropertyId.A_EXHAUSTED_RECORD,
            "a call out of attempts after a worker reach records failed for a read and "
            "outcome_unknown for another class, a cancelled or timed-out single attempt "
            "included (D-4); an executor declaring D-4's other choice records that one failed",
            "TC-REC-EXHAUST-READ", "TC-REC-EXHAUST-OTHER", "D-9", "D-4"),
    _always(PropertyId.A_RECORD_MEANING,
            "each record means what the page's table says (succeeded: the tool returned; "
            "failed: the tool reported a failure or no attempt reached a worker; rejected: a "
            "person or the deadline, no attempt; outcome_unknown: an attempt reached a worker), "
            "with failed records excepted only where the page or a declared choice puts them: a "
            "read out of attempts after a worker reach, which the page itself records failed "
            "and which has no effect to hide, and, for an executor declaring D-4's other "
            "choice only, a cancelled single attempt, whose write may land after the record "
            "(F-7) and which reconcile --include-cancelled settles (D-20)",
            "TC-REC-SUCC", "TC-REC-FAIL", "TC-REC-REJ", "TC-REC-UNK", "TC-REC-EXHAUST-READ",
            "D-4", FindingId.F_7, "D-20"),
    _always(PropertyId.A_RETRY_CLASSES, "only reads and idempotent writes get a second attempt",
            "TC-POL-2", "TC-REC-RETRY", "TC-EFF-READ", "TC-EFF-IDEM"),
    _always(PropertyId.A_SAME_KEY, "every attempt of a call passes the same idempotency key",
            "TC-KEY-1", "TC-KEY-2"),
    _always(PropertyId.A_APPROVAL,
            "no attempt before approval, and none after a rejection or deadline",
            "TC-APR-2", "TC-APR-3", "TC-REC-REJ", "D-7"),
    _always(PropertyId.A_POLICY_SNAPSHOT,
            "a call behaves by the policy that applied when it was asked, whatever changes later",
            "TC-SNAP-1", "TC-SNAP-2"),
    _always(PropertyId.A_DOUBLE_RUN_SHAPE,
            "two runs of a single-attempt tool overlap only when one belongs to a call the "
            "engine gave up on while it could still run and the other to another call",
            "TC-AMO-3", "TC-AMO-4", "D-6"),
    _always(PropertyId.A_TOOL_RESULT,
            "a recorded call reaches the model as exactly one tool result in the session "
            "history, the text its record and error make (a succeeded call's: an output its "
            "tool returned); a call without a record has none", "TC-REC-2", "TC-RCN-1"),
    _always(PropertyId.A_CANCEL_ON_TIMEOUT,
            "an attempt still out at a worker when its run timeout fires is cancelled: that "
            "worker is sent Cancel for it; the timeout fires no sooner than the run timeout "
            "after the worker's Started reached the engine (start-to-close)", "TC-AMO-3"),
    _always(PropertyId.A_FENCE,
            "with the fence on, no attempt of a single-attempt tool is handed out while a run "
            "of the tool that the engine gave up on still goes on", "D-6"),
    _always(PropertyId.A_HEARD_KEEPS_ATTEMPT,
            "a worker that holds an attempt and heartbeats within the heartbeat timeout keeps "
            "it: no attempt is declared lost with its worker while a heartbeat of that worker "
            "reached the executor less than the heartbeat timeout before",
            "TC-REC-LOST", "TC-AMO-2", "D-12"),
    _sometimes(PropertyId.S_DOUBLE_RUN,
               "a cancelled run still going overlaps a run of a later call of the same tool",
               "TC-AMO-3", "TC-AMO-4"),
    _sometimes(PropertyId.S_READ_RETRY_AFTER_LOSS,
               "a read is attempted again after its worker was lost",
               "TC-REC-RETRY", "TC-REC-LOST"),
    _sometimes(PropertyId.S_LOST_BEFORE_HEARTBEAT,
               "an attempt is lost after its tool started and before its first heartbeat "
               "reached the server", "TC-REC-LOST"),
    _sometimes(PropertyId.S_UNKNOWN_NEVER_RAN,
               "a call recorded outcome_unknown whose tool never ran (a server restart)",
               "TC-RCN-ASK", "D-8"),
    *(
        _sometimes(record_witness_id(effect, record),
                   f"a {effect.value} call ends {record.value}",
                   "TC-REC-1", _RECORD_CLAUSE[record])
        for effect, records in RECORDS_ALLOWED.items()
        for record in records
    ),
    _eventually(PropertyId.E_EVERY_CALL_RECORDED, "every call gets a record", "TC-REC-1"),
    _eventually(PropertyId.E_RECONCILE_ONCE,
                "reconcile reports each outcome_unknown call exactly once, however often it runs "
                "(with --include-cancelled also each failed call whose tool may still be running)",
                "TC-RCN-ONCE", "TC-RCN-TELL", "D-20"),
)

PROPERTIES: Mapping[str, Property] = {p.id: p for p in _PROPERTIES}


def of_kind(kind: Kind) -> tuple[Property, ...]:
    return tuple(p for p in _PROPERTIES if p.kind is kind)
