"""The reconcile job: tells a session the real outcome of each of its calls that ended
`outcome_unknown`, once, however often the job runs and wherever it crashes.

A run does the page's four steps for one session:

1. Find the calls (TC-RCN-FIND): it reads the session's history with `get_agent_snapshot`
   *first*, before it asks anything or sends anything.
2. Rebuild each call's idempotency key from the tool result's turn and call ids (TC-RCN-KEY);
   a call whose key a user message already names was reported by an earlier run and is
   skipped (`atmostonce.spec.reconcile.pending_reports`, TC-RCN-ONCE).
3. Ask the Flow's history, then the service (TC-RCN-HISTORY, TC-RCN-ASK, D-30): when the
   snapshot's history of the call shows that no attempt ever reached a worker, the tool did not
   run and the report says so without asking the service (`history_finding`); otherwise a
   `check(key, tool arguments as JSON)` the caller passes returns the finding, or
   `ledger_check` asks the effect ledger, which holds every write the tools made with their
   keys and every run the workers started.
4. Tell the session (TC-RCN-TELL): one `send_user_message` per call, worded as a note from the
   application that names the key (`spec.reconcile.report_text`), since the model reads it as
   the user's words.

A send is never retried. A send that fails, or whose answer never comes, ends the run; the
report may or may not have joined the history, and the next run reads the history again and
sends only what is still missing. That is what makes the job exactly-once across reruns and
across a crash between a send and its return (TC-RCN-ONCE). Runs for one session must not
overlap: two runs that both read the history before either sent would both report.

With `include_cancelled` a run also reconciles the calls recorded failed because their attempt
was cancelled while the tool may still have been running, which only an executor declaring
D-4's other choice (`cancel_records_failed`) records; by default such calls are outcome_unknown
and the page's steps find them. Under that choice such a write can land after the record (F-7),
and the page's steps look only for outcome_unknown. Each report says which
of the two kinds its call was (D-20). The job is how these calls are found at all: no search
finds them for the application, because no Step waits on them (TC-RCN-NOSEARCH).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.spec.errors import SpecError
from atmostonce.spec.reconcile import (
    CallKind,
    cancelled_result,
    history_finding,
    pending_reports,
    report_text,
    unknown_result,
)
from atmostonce.spec.session import AgentSnapshot

OutcomeCheck = Callable[[str, str], Awaitable[str]]
"""Asks the service about one call: (idempotency key, tool arguments as JSON) -> the finding,
a short sentence the report quotes (TC-RCN-ASK)."""

DEFAULT_SOURCE = "the effect ledger"
"""Who the report says the note comes from, when the caller names nobody else."""


class SessionMessenger(Protocol):
    """The two session calls reconcile needs, with the page's names and shapes
    (TC-RCN-NAMES); `atmostonce.runtime.client.AsyncClient` has them."""

    async def get_agent_snapshot(self, session_id: str) -> AgentSnapshot: ...

    async def send_user_message(self, session_id: str, text: str) -> bool: ...


@dataclass(frozen=True)
class Report:
    """One report sent: the call's key, the text, whether the session took it, and which kind
    of unsettled call it was (D-20)."""

    key: str
    text: str
    accepted: bool
    kind: CallKind = CallKind.OUTCOME_UNKNOWN
    from_history: bool = False
    """The finding came from the Flow's history, and the service was not asked (D-30)."""


@dataclass
class ReconcileRun:
    """What one run found and did."""

    session_id: str
    unknown: int
    """outcome_unknown calls in the history."""
    already_reported: int
    """...of which a user message already named the key."""
    reports: list[Report] = field(default_factory=list)
    interrupted: str | None = None
    """Why the run stopped before reporting every pending call: rerun it, never retry."""
    cancelled: int = 0
    """With `include_cancelled`: failed calls whose tool may still have been running (D-20);
    `already_reported` counts both kinds."""

    @property
    def complete(self) -> bool:
        return self.interrupted is None

    def as_json(self) -> dict[str, object]:
        return {"session": self.session_id, "unknown": self.unknown,
                "cancelled": self.cancelled,
                "already_reported": self.already_reported,
                "reported": [{"key": r.key, "kind": r.kind.value, "text": r.text,
                              "accepted": r.accepted, "from_history": r.from_history}
                             for r in self.reports],
                "interrupted": self.interrupted}


def unknown_calls(snapshot: AgentSnapshot) -> int:
    """How many distinct calls the history shows with an unknown outcome (TC-RCN-FIND)."""
    return len({(m.turn_id, m.tool_call_id) for m in snapshot.messages if unknown_result(m)})


def cancelled_calls(snapshot: AgentSnapshot) -> int:
    """How many distinct calls the history shows failed while the tool may still be running
    (D-20)."""
    return len({(m.turn_id, m.tool_call_id) for m in snapshot.messages if cancelled_result(m)})


async def report_unknown_outcomes(sessions: SessionMessenger, session_id: str,
                                  check: OutcomeCheck, source: str = DEFAULT_SOURCE, *,
                                  require_session: bool = False,
                                  include_cancelled: bool = False) -> ReconcileRun:
    """One run of the job for `session_id` (see the module docstring). A failure to read the
    history propagates; a failed check or send ends the run with `interrupted` set. With
    `require_session`, a session the history shows nothing of is a SpecError (see
    `shows_nothing`); with `include_cancelled`, failed calls whose tool may still have been
    running are reconciled too (D-20)."""
    snapshot = await sessions.get_agent_snapshot(session_id)
    if require_session and shows_nothing(snapshot):
        raise SpecError(f"no session named {session_id!r}: the server shows no call and no "
                        "message of it")
    pending = pending_reports(session_id, snapshot.messages, include_cancelled)
    unknown = unknown_calls(snapshot)
    cancelled = cancelled_calls(snapshot) if include_cancelled else 0
    run = ReconcileRun(session_id, unknown, unknown + cancelled - len(pending),
                       cancelled=cancelled)
    for call in pending:
        try:
            finding, from_history = await find_out(snapshot, call.key, call.tool_arguments,
                                                   check)
        except Exception as error:
            run.interrupted = f"asking about {call.key} failed: {_reason(error)}"
            return run
        text = report_text(source, finding, call.key)
        try:
            accepted = await sessions.send_user_message(session_id, text)
        except Exception as error:
            run.interrupted = (f"the report of {call.key} may or may not have reached the "
                               f"session ({_reason(error)}); run the job again")
            return run
        run.reports.append(Report(call.key, text, accepted, call.kind, from_history))
        if not accepted:
            run.interrupted = f"the session {session_id!r} refused the report of {call.key}"
            return run
    return run


async def find_out(snapshot: AgentSnapshot, key: str, arguments: str,
                   check: OutcomeCheck) -> tuple[str, bool]:
    """What happened to the call with `key`: the Flow's history is asked first, and only when
    it does not show that the tool never ran is the service asked (TC-RCN-HISTORY,
    TC-RCN-ASK, D-30). Returns the finding and whether it came from the history."""
    found = history_finding(snapshot, key)
    if found is not None:
        return found, True
    return await check(key, arguments), False


def shows_nothing(snapshot: AgentSnapshot) -> bool:
    """Whether the snapshot holds no call and no message: how `get_agent_snapshot` answers for
    a session the server does not know, and also for one opened with nothing in it yet, which
    has nothing to reconcile either."""
    return not snapshot.tool_calls and not snapshot.messages


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__


def finding_of(lookup: dict[str, Any]) -> str:
    """The effect ledger's answer about one key, as a finding (TC-RCN-ASK): how many writes
    with the key the service applied, and whether any run of the tool never recorded an end
    (its worker was killed, or it still runs)."""
    applied = int(lookup.get("applied", 0))
    runs = lookup.get("runs") or []
    open_runs = sum(1 for r in runs if r.get("ended") is None)
    if applied == 1:
        found = "the service holds one operation with this key: the call took effect"
    elif applied > 1:
        found = f"the service holds {applied} operations with this key: the call took effect"
    elif runs:
        found = ("the service holds no operation with this key: the tool started but took no "
                 "effect")
    else:
        found = "the tool never ran and the service holds no operation with this key"
    if open_runs:
        found += (f"; {open_runs} run(s) of the tool recorded no end (a worker killed "
                  "mid-run, or still running)")
    return found


def ledger_check(host: str, port: int, token: str) -> tuple[OutcomeCheck, Callable[[], None]]:
    """A check that asks the effect ledger at host:port (presenting its `token`), and the
    function that closes its connection (opened on the first question)."""
    return _asking(AsyncLedger(host, port, token=token))


async def connected_ledger_check(host: str, port: int, token: str
                                 ) -> tuple[OutcomeCheck, Callable[[], None]]:
    """`ledger_check` with its connection opened now: SpecError, one line, when the ledger at
    host:port cannot be reached or refuses the token, before the job reads or sends
    anything."""
    ledger = AsyncLedger(host, port, token=token)
    await ledger.connect()
    return _asking(ledger)


def _asking(ledger: AsyncLedger) -> tuple[OutcomeCheck, Callable[[], None]]:
    async def check(key: str, arguments: str) -> str:
        return finding_of(await ledger.request({"op": "lookup", "key": key}))

    return check, ledger.close


def as_check(function: Callable[[str, str], object]) -> OutcomeCheck:
    """An OutcomeCheck from a user function that returns the finding, directly or awaitable;
    the finding must be a string. SpecError, one line, for a function that cannot be called
    with (key, tool arguments)."""
    try:
        signature: inspect.Signature | None = inspect.signature(function)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        try:
            signature.bind("key", "{}")
        except TypeError:
            name = getattr(function, "__qualname__", repr(function))
            raise SpecError(f"the check {name}{signature} cannot be called with (key, tool "
                            "arguments)") from None

    async def check(key: str, arguments: str) -> str:
        found = function(key, arguments)
        if inspect.isawaitable(found):
            found = await found
        if not isinstance(found, str):
            raise TypeError(f"the check returned {type(found).__name__}, not a string")
        return found

    return check

