"""Which outcome_unknown calls a reconcile run still has to report, and how a report reads.

Pure: the runtime's `atmostonce.runtime.reconcile` does the reading and sending.
Clause ids: TC-RCN-KEY, TC-RCN-TELL, TC-RCN-ONCE, TC-RCN-HISTORY, D-30.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from atmostonce.spec.keys import build_key
from atmostonce.spec.session import (
    OUTCOME_UNKNOWN_TOOL_RESULT,
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallView,
)

_REPORTED = re.compile(r"\(tool call ([^\s()]+)\)")


@dataclass(frozen=True)
class PendingReport:
    """An outcome_unknown call no user message has reported yet."""

    key: str
    tool_arguments: str


def reported_keys(messages: Iterable[Message]) -> frozenset[str]:
    """The keys that user messages already name as reported (TC-RCN-ONCE)."""
    keys: set[str] = set()
    for message in messages:
        if message.role is MessageRole.USER:
            keys.update(_REPORTED.findall(message.text))
    return frozenset(keys)


def unknown_result(message: Message) -> bool:
    """Whether `message` is a tool result that says the call's outcome is unknown (TC-RCN-FIND)."""
    return message.role is MessageRole.TOOL and OUTCOME_UNKNOWN_TOOL_RESULT in message.tool_output


def pending_reports(session_id: str, messages: Iterable[Message]) -> list[PendingReport]:
    """Unknown calls in the history whose key no user message names, in history order.

    Reading the history first is what makes a rerun send nothing new, including after a crash
    between a send and its return (TC-RCN-ONCE); the key is rebuilt from the tool result's
    turn and call ids (TC-RCN-KEY).
    """
    history = list(messages)
    done = reported_keys(history)
    pending: list[PendingReport] = []
    for message in history:
        if not unknown_result(message):
            continue
        key = build_key(session_id, message.turn_id, message.tool_call_id)
        if key in done or any(p.key == key for p in pending):
            continue
        pending.append(PendingReport(key, message.tool_arguments or "{}"))
    return pending


def report_text(source: str, finding: str, key: str) -> str:
    """A report worded as a note from the application, naming the call's key (TC-RCN-TELL)."""
    return f"Note from {source}: {finding} (tool call {key})"


# TC-RCN-HISTORY, D-30: the finding when the Flow's history settles the question by itself.
NEVER_REACHED_FINDING = ("the Flow's history shows that no attempt of the call reached a worker: "
                         "the tool did not run")


def never_reached(view: ToolCallView) -> bool:
    """Whether the call's history shows that no attempt of it ever reached a worker, so the
    tool did not run (TC-RCN-HISTORY). Only a history the engine shows counts, and only a
    hand-out counts as the reach (D-5): neither a missing `Started` nor a loss at a server
    restart says the tool did not run (D-30)."""
    return view.history and not any(attempt.reached for attempt in view.attempts)


def history_finding(snapshot: AgentSnapshot, key: str) -> str | None:
    """Reconcile's history step, asked before the service (TC-RCN-HISTORY, D-30): the finding
    when the snapshot's history of the call with `key` shows the tool did not run, else None
    (the service must be asked)."""
    for view in snapshot.tool_calls:
        own = view.idempotency_key or \
            f"{snapshot.session_id}/{view.turn_id}/{view.tool_call_id}"
        if own == key:
            return NEVER_REACHED_FINDING if never_reached(view) else None
    return None
