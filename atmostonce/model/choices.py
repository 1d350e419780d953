"""The modelled executor's choices: the record rule compiled from the spec's `decide`, and
the other protocol decisions a model mutant turns wrong."""

from __future__ import annotations

from dataclasses import dataclass, field

from atmostonce.model.layout import (
    CALL_SINGLE,
    CALL_TOOL,
    EFFECT_INDEX,
    EFFECTS,
    FAILURE_INDEX,
    FK_NONE,
    SPEC_END,
)
from atmostonce.model.tables import Table
from atmostonce.spec.records import FailureKind, Record, decide

Decisions = dict[tuple[int, int, bool, bool, bool], tuple[str, int]]
"""(effect, how the attempt ended, attempts remain, an earlier attempt reached a worker, D-4's
choice `cancel_records_failed`) -> the call machine's trigger and failure kind."""


def decision_table() -> Decisions:
    """Every situation under both choices of D-4 -> the call machine's trigger and failure
    kind, taken from the spec's `decide`."""
    names = {
        FailureKind.TOOL_ERROR: "tool_failed", FailureKind.DID_NOT_RUN: "did_not_run",
        FailureKind.MAY_HAVE_RUN: "may_have_run", FailureKind.MAY_STILL_BE_RUNNING: "may_still_run",
    }
    table: Decisions = {}
    for effect in EFFECTS:
        for end_kind, end in SPEC_END.items():
            for more in (False, True):
                for reached in (False, True):
                    for fails in (False, True):
                        d = decide(effect, end, 1 if more else 2, 2, reached, fails)
                        if d.retry:
                            entry = ("retry", FK_NONE)
                        elif d.record is Record.SUCCEEDED:
                            entry = ("returned", FK_NONE)
                        elif d.record is Record.OUTCOME_UNKNOWN:
                            entry = ("unknown", FK_NONE)
                        else:
                            assert d.failure is not None
                            entry = (names[d.failure], FAILURE_INDEX[d.failure])
                        table[(EFFECT_INDEX[effect], end_kind, more, reached, fails)] = entry
    return table


def under_choice(table: Decisions, cancel_records_failed: bool
                 ) -> dict[tuple[int, int, bool, bool], tuple[str, int]]:
    """The decisions of an executor that declares this choice of D-4."""
    return {k[:4]: v for k, v in table.items() if k[4] == cancel_records_failed}


@dataclass(frozen=True)
class ModelChoices:
    """The modelled executor's protocol choices; each is a knob a model mutant turns wrong."""

    call_tool: Table = CALL_TOOL
    call_single: Table = CALL_SINGLE
    decisions: Decisions = field(default_factory=decision_table)
    single_max_attempts: int = 1
    reach_at_hand: bool = True
    self_fence: bool = True
    retry_after_unknown: bool = False
    approval_default: bool = True
    snapshot_policy: bool = True
    rehand_lost: bool = False
    late_result_overwrites: bool = False
    retry_key_changes: bool = False
    fence_checked: bool = True
    reconcile_reads_history: bool = True
    restart_loss_reached: bool = True
    """Reconcile's history step counts an attempt lost at a server restart as having reached
    its worker (D-30); the mutant reads it as never reached."""
    decide_lost: bool = True
