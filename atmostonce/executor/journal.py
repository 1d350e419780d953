"""The journal's entries: what the executor persists, as self-describing JSON; `facts` holds what
each entry states and `reader` reads them back for `recover`.

Every entry is a JSON object with a `type` and the data of one durable fact, so recovery is a
pure fold over them. The facts: a tool's policy and a session's default (so later asks resolve
the same way after a restart), a call with the policy it keeps from ask time (TC-SNAP-1), an
accepted approval answer or deadline (D-7), an attempt queued, handed to a worker (before its
go-ahead, D-5) and ended, a call's record (TC-REC-1), a user message (TC-RCN-TELL), and the end
of runs the executor had given up on (TC-AMO-3, D-6, D-12).
"""

from __future__ import annotations

import enum

from atmostonce.executor.state import Attempt
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.policy import EffectClass, EffectivePolicy, ToolHints, ToolPolicy
from atmostonce.spec.protocol import JSON
from atmostonce.spec.records import AttemptEnd, Outcome

Entry = dict[str, JSON]


class EntryType(enum.Enum):
    POLICY = "policy"
    SESSION = "session"
    ASK = "ask"
    APPROVAL = "approval"
    QUEUED = "queued"
    HANDED = "handed"
    ENDED = "ended"
    RECORD = "record"
    USER_MESSAGE = "user_message"
    RUN_OVER = "run_over"
    WORKER_LOST = "worker_lost"



# -- writing ----------------------------------------------------------------------------------
# An enum member's JSON name is its `_value_`, read directly: entries are written on every step.


def policy_entry(at: float, tool: str, policy: ToolPolicy | None,
                 hints: ToolHints | None) -> Entry:
    hints_json: JSON = None
    if hints is not None:
        hints_json = {"read_only": hints.read_only, "idempotent": hints.idempotent,
                      "destructive": hints.destructive}
    entry: Entry = {
        "type": "policy", "at": at, "tool": tool,
        "effect": policy.effect._value_ if policy is not None else None,
        "requires_approval": policy.requires_approval if policy is not None else None,
        "hints": hints_json,
    }
    if policy is not None and policy.approval_deadline is not None:
        entry["approval_deadline"] = policy.approval_deadline
    return entry


def session_entry(at: float, session_id: str, default_effect: EffectClass | None,
                  hints_may_lower: bool = True) -> Entry:
    """A session opened; `hints_may_lower` (D-22) is written only when false, so journals of
    sessions that keep the default read as before."""
    entry: Entry = {"type": "session", "at": at, "session_id": session_id,
                    "default_effect": default_effect._value_ if default_effect is not None
                    else None}
    if not hints_may_lower:
        entry["hints_may_lower"] = False
    return entry


def ask_entry(at: float, key: str, session_id: str, turn_id: str, tool_call_id: str, tool: str,
              arguments: str, policy: EffectivePolicy, approval_deadline: float) -> Entry:
    """A call and the effective policy and approval deadline it keeps from now on (TC-SNAP-1,
    D-32)."""
    return {
        "type": "ask", "at": at, "key": key, "session_id": session_id, "turn_id": turn_id,
        "tool_call_id": tool_call_id, "tool": tool, "arguments": arguments,
        "effect": policy.effect._value_, "requires_approval": policy.requires_approval,
        "source": policy.source._value_, "approval_deadline": approval_deadline,
    }


def approval_entry(at: float, key: str, state: ApprovalState) -> Entry:
    return {"type": "approval", "at": at, "key": key, "state": state._value_}


def queued_entry(at: float, attempt: Attempt) -> Entry:
    return {"type": "queued", "at": at, "key": attempt.call.key, "attempt": attempt.id,
            "number": attempt.number}


def handed_entry(at: float, attempt: Attempt, worker: str) -> Entry:
    """The attempt is handed to `worker`: written before the go-ahead (D-5)."""
    return {"type": "handed", "at": at, "key": attempt.call.key, "attempt": attempt.id,
            "number": attempt.number, "worker": worker}


def ended_entry(at: float, attempt: Attempt, end: AttemptEnd, may_still_run: bool,
                output: str) -> Entry:
    """The attempt ended; `may_still_run` says its run may go on at its worker (TC-AMO-3)."""
    return {"type": "ended", "at": at, "key": attempt.call.key, "attempt": attempt.id,
            "number": attempt.number, "end": end._value_, "may_still_run": may_still_run,
            "output": output}


def record_entry(at: float, key: str, outcome: Outcome, output: str) -> Entry:
    return {"type": "record", "at": at, "key": key, "record": outcome.record._value_,
            "error": outcome.error,
            "failure": outcome.failure._value_ if outcome.failure is not None else None,
            "output": output}


def user_message_entry(at: float, session_id: str, text: str) -> Entry:
    return {"type": "user_message", "at": at, "session_id": session_id, "text": text}


def run_over_entry(at: float, attempt: str, worker: str) -> Entry:
    return {"type": "run_over", "at": at, "attempt": attempt, "worker": worker}


def worker_lost_entry(at: float, worker: str) -> Entry:
    """The worker was declared lost, so its abandoned runs are over (D-12)."""
    return {"type": "worker_lost", "at": at, "worker": worker}
