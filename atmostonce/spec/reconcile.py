"""Which calls a reconcile run still has to report, and how a report reads.

Pure: the runtime's `atmostonce.runtime.reconcile` does the reading and sending.
Clause ids: TC-RCN-KEY, TC-RCN-TELL, TC-RCN-ONCE, TC-RCN-NEXT, TC-RCN-HISTORY, decisions D-20,
D-21 and D-30.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

from atmostonce.spec.keys import build_key
from atmostonce.spec.session import (
    MAY_STILL_BE_RUNNING_TOOL_RESULT,
    OUTCOME_UNKNOWN_TOOL_RESULT,
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallView,
)

# D-21: a report names its call as "(tool call KEY)"; a key holds no white space (D-2), so KEY
# is the longest run of other characters before the closing parenthesis, which also keeps a key
# with parentheses in it whole.
_REPORTED = re.compile(r"\(tool call (\S+)\)")


class CallKind(enum.Enum):
    """Which of the two kinds of unsettled call a report is about (D-20)."""

    OUTCOME_UNKNOWN = "outcome_unknown"
    """Recorded outcome_unknown: the page's reconcile steps are for these."""
    MAY_STILL_BE_RUNNING = "failed_may_still_be_running"
    """Recorded failed because its attempt was cancelled while the tool may still have been
    running, by an executor declaring D-4's other choice: its write can land after the record
    (F-7)."""


@dataclass(frozen=True)
class PendingReport:
    """An unsettled call no user message has reported yet."""

    key: str
    tool_arguments: str
    kind: CallKind = CallKind.OUTCOME_UNKNOWN


def report_keys_in(text: str) -> list[str]:
    """Every key `text` names in the report form "(tool call KEY)", once per mention (D-21)."""
    return _REPORTED.findall(text)


def reported_keys(messages: Iterable[Message]) -> frozenset[str]:
    """The keys that user messages name in a report's "(tool call KEY)" form (TC-RCN-ONCE,
    D-21); a key that merely appears in a message, or inside a longer key, is not reported."""
    keys: set[str] = set()
    for message in messages:
        if message.role is MessageRole.USER:
            keys.update(_REPORTED.findall(message.text))
    return frozenset(keys)


def unknown_result(message: Message) -> bool:
    """Whether `message` is a tool result that says the call's outcome is unknown (TC-RCN-FIND)."""
    return message.role is MessageRole.TOOL and OUTCOME_UNKNOWN_TOOL_RESULT in message.tool_output


def cancelled_result(message: Message) -> bool:
    """Whether `message` is a tool result of a failed call whose error says the tool may still
    be running (D-4's other choice, D-20)."""
    return (message.role is MessageRole.TOOL
            and message.tool_output.startswith(MAY_STILL_BE_RUNNING_TOOL_RESULT))


def kind_of(message: Message, include_cancelled: bool = False) -> CallKind | None:
    """Which kind of unsettled call `message` is the tool result of, or None when it is none
    that the run looks at (cancelled ones only with `include_cancelled`, D-20)."""
    if unknown_result(message):
        return CallKind.OUTCOME_UNKNOWN
    if include_cancelled and cancelled_result(message):
        return CallKind.MAY_STILL_BE_RUNNING
    return None


def pending_reports(session_id: str, messages: Iterable[Message],
                    include_cancelled: bool = False) -> list[PendingReport]:
    """Unsettled calls in the history whose key no user message names, in history order: the
    outcome_unknown ones, and with `include_cancelled` also the failed ones whose tool may still
    be running (D-20).

    Reading the history first is what makes a rerun send nothing new, including after a crash
    between a send and its return (TC-RCN-ONCE); the key is rebuilt from the tool result's
    turn and call ids (TC-RCN-KEY).
    """
    history = list(messages)
    done = reported_keys(history)
    pending: list[PendingReport] = []
    for message in history:
        kind = kind_of(message, include_cancelled)
        if kind is None:
            continue
        key = build_key(session_id, message.turn_id, message.tool_call_id)
        if key in done or any(p.key == key for p in pending):
            continue
        pending.append(PendingReport(key, message.tool_arguments or "{}", kind))
    return pending


def report_text(source: str, finding: str, key: str) -> str:
    """A report worded as a note from the application, naming the call's key (TC-RCN-TELL), in
    the one form `reported_keys` recognises (D-21). The next turn's model works from it and
    does not ask for the call again when it already took effect (TC-RCN-NEXT)."""
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
