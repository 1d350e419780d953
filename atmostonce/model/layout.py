"""How a state of the composed system is encoded: the compiled component tables, the numbers
of their states, the fields of a state and of a call, and the ghost bits.

A state is one flat tuple of small integers: the globals (fault budgets, policy versions,
the reconcile job), one number per worker, then one interned id per call. A call is itself
a tuple of integers (its fields are named below, by index), interned once, so a state hashes
and canonicalises in a fraction of a microsecond.

Ghost bits (hand count, runs started, results delivered, record writes, approval given, keys
used, how the last attempt ended) are bookkeeping kept apart from the protocol's decisions;
the properties read them, the protocol never does.
"""

from __future__ import annotations

from typing import Final

from atmostonce.model import machines
from atmostonce.model.tables import compile_machine
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import AttemptEnd, FailureKind, Record

# ---------------------------------------------------------------------------------------------
# Compiled component tables and the state numbers the system uses.

CALL_TOOL: Final = compile_machine(machines.CALL_TOOL)
CALL_SINGLE: Final = compile_machine(machines.CALL_SINGLE_ATTEMPT_TOOL)
ATTEMPT: Final = compile_machine(machines.ATTEMPT)
WORKER: Final = compile_machine(machines.WORKER)
RUN: Final = compile_machine(machines.RUN)
KEYED: Final = compile_machine(machines.KEYED_LEDGER)
PLAIN: Final = compile_machine(machines.PLAIN_LEDGER)
TABLES: Final = (CALL_TOOL, CALL_SINGLE, ATTEMPT, WORKER, RUN, KEYED, PLAIN)

assert CALL_TOOL.states == CALL_SINGLE.states
C_ASKED = CALL_TOOL.index["asked"]
C_AWAIT = CALL_TOOL.index["awaiting_approval"]
C_ATTEMPTING = CALL_TOOL.index["attempting"]
C_SUCCEEDED = CALL_TOOL.index["succeeded"]
C_FAILED = CALL_TOOL.index["failed"]
C_REJECTED = CALL_TOOL.index["rejected"]
C_UNKNOWN = CALL_TOOL.index["outcome_unknown"]
RECORD_OF_STATE: Final = {CALL_TOOL.index[r.value]: r for r in Record}

A_NONE = ATTEMPT.index["none"]
A_QUEUED = ATTEMPT.index["queued"]
A_HANDED = ATTEMPT.index["handed"]
A_STARTED = ATTEMPT.index["started"]
A_RUNNING = ATTEMPT.index["running"]
A_OUT: Final = (A_HANDED, A_STARTED, A_RUNNING)

W_UP = WORKER.index["up"]
W_DISC = WORKER.index["disconnected"]
W_CRASHED = WORKER.index["crashed"]
W_DOWN = WORKER.index["down"]

R_STARTED = RUN.index["started"]
R_APPLIED = RUN.index["applied"]
R_HELD_OK = RUN.index["held_ok"]
R_HELD_FAIL = RUN.index["held_failure"]

# How an attempt ended (the ghost LEND field).
E_NONE, E_NOT_REACHED, E_RETURNED, E_TOOL_FAILED, E_LOST, E_LOST_RESTART, E_CANCELLED = range(7)
END_NAMES: Final = ("-", "never reached a worker", "returned", "tool reported a failure",
                    "worker lost", "lost at a server restart", "cancelled (timed out)")
SPEC_END: Final = {
    E_NOT_REACHED: AttemptEnd.NOT_REACHED, E_RETURNED: AttemptEnd.RETURNED,
    E_TOOL_FAILED: AttemptEnd.TOOL_FAILED, E_LOST: AttemptEnd.WORKER_LOST,
    E_LOST_RESTART: AttemptEnd.WORKER_LOST, E_CANCELLED: AttemptEnd.CANCELLED,
}

FK_NONE = 0
FAILURE_INDEX: Final = {kind: i + 1 for i, kind in enumerate(FailureKind)}
FAILURE_OF_INDEX: Final = {i: kind for kind, i in FAILURE_INDEX.items()}
FK_DID_NOT_RUN = FAILURE_INDEX[FailureKind.DID_NOT_RUN]
FK_MAY_STILL = FAILURE_INDEX[FailureKind.MAY_STILL_BE_RUNNING]

EFFECTS: Final = tuple(EffectClass)
EFFECT_INDEX: Final = {e: i for i, e in enumerate(EFFECTS)}
READ_I = EFFECT_INDEX[EffectClass.READ]
NONIDEM_I = EFFECT_INDEX[EffectClass.NON_IDEMPOTENT_WRITE]

# ---------------------------------------------------------------------------------------------
# State layout.

# A call's fields: T tool, POL policy, GPOL ask_policy, CS call, FK failure, NATT attempts,
# RCH reached, AS attempt, AW attempt_worker, RUNS runs, EFF ledger, ABW abandoned_on,
# REP reports, JOBP job_pending, RSK asked_again, G ghost.
(T, POL, GPOL, CS, FK, NATT, RCH, AS, AW, RUNS, EFF, ABW, REP, JOBP, RSK, G) = range(16)
# The globals: ASK asks_left, RSKB reasks_left, CR crashes_left, PT partitions_left,
# RS restarts_left, TO timeouts_left, PC policy_changes_left, TV changed_tools,
# TE effects_by_tool, JOB reconcile_running, JC reconcile_crashes_left, FT faults_left.
(ASK, RSKB, CR, PT, RS, TO, PC, TV, TE, JOB, JC, FT) = range(12)
NG: Final = 12

# Ghost bits of G.
G_ISREASK = 1
G_HANDS_SHIFT, G_HANDS_MASK = 1, 7
G_OKD = 1 << 4
G_RAN_SHIFT, G_RAN_MASK = 5, 3
G_RECW_SHIFT, G_RECW_MASK = 7, 3
G_APPROVED = 1 << 9
G_KEYBAD = 1 << 10
G_LEND_SHIFT, G_LEND_MASK = 11, 7
G_HB = 1 << 14
G_DEADLINE = 1 << 15  # rejected because the approval deadline passed, not by a person
G_HISTORY_NOT_RUN = 1 << 16  # reconcile reported from the history that the tool did not run

Call = tuple[int, ...]
Run = tuple[int, int, int]  # (worker, run state, attempt number)
State = tuple[int, ...]
Label = tuple[str, int, int]


def hands(g: int) -> int:
    return (g >> G_HANDS_SHIFT) & G_HANDS_MASK


def runs_started(g: int) -> int:
    return (g >> G_RAN_SHIFT) & G_RAN_MASK


def record_writes(g: int) -> int:
    return (g >> G_RECW_SHIFT) & G_RECW_MASK


def last_end(g: int) -> int:
    return (g >> G_LEND_SHIFT) & G_LEND_MASK
