"""The kinds of step the model takes, the first element of its step labels and the `action` of
a trace's steps, which the model, the conformance replay, the runtime's trace replay and the
charts all read.

They are plain strings, not enum members, so labels, states and their hashes stay what they
are: the explorer compares and hashes them on its hot path.
"""

from __future__ import annotations

from typing import Final


class StepKind:
    """Every kind of model step, named after its text (`model.trace` says each in a sentence);
    code names a step kind by these."""

    ASK: Final = "ask"
    REASK: Final = "reask"
    CHANGE_POLICY: Final = "change_policy"
    APPROVE: Final = "approve"
    REJECT: Final = "reject"
    DEADLINE: Final = "deadline"
    EXPIRE: Final = "expire"
    HAND: Final = "hand"
    GO: Final = "go"
    HEARTBEAT: Final = "heartbeat"
    TIME_OUT: Final = "time_out"
    APPLY: Final = "apply"
    FINISH_OK: Final = "finish_ok"
    FINISH_FAIL: Final = "finish_fail"
    CRASH: Final = "crash"
    DISCONNECT: Final = "disconnect"
    RECONNECT: Final = "reconnect"
    DETECT: Final = "detect"
    REJOIN: Final = "rejoin"
    RESTART: Final = "restart"
    RECONCILE: Final = "reconcile"
    RECONCILE_CRASH: Final = "reconcile_crash"
