"""What the Temporal server saw, read from the workflow histories and the tool workers' events
files: the `ServerLog` the Temporal adapter gives the chaos harness.

From each session's history:

- `HandedOut` for the attempt an ActivityTaskStarted event names (worker: its identity, at:
  its time, when the server recorded the start before answering the worker's poll, D-5), and
  for a started attempt still pending when the history was read;
- `ResultDelivered` and a run end for ActivityTaskCompleted, and for ActivityTaskFailed with a
  failure the tool reported (D-3);
- `Cancelled` for a start-to-close timeout (the engine gave up on a run that may go on,
  TC-AMO-3); a heartbeat timeout needs no entry: an attempt that ended without one is lost
  with its worker;
- `TimerStarted` for each approval-deadline timer (the history names it by its summary), and
  `TimerFired` when the deadline took effect, before any answer was taken: its timer fired, or
  an `answer` update found it passed (the workflow judges by its clock, so an answer can find
  the deadline passed before the timer's event is written);
- `ApprovalAnswered` for each `answer` update the workflow accepted, at the moment the workflow
  read it: the start of the workflow task that took it, the `workflow.now()` the workflow
  judged the deadline by.

Temporal's history keeps only the last attempt's STARTED event, so the hand-outs of earlier
attempts come from the workers' events files (`worker.EventsFile`), where each worker notes an
attempt before it does anything else with it. A worker killed between getting a task and that
note leaves one trace only: when the activity closes, its failure's cause is the previous
attempt's failure, and only an attempt that started fails in a way Temporal retries (the same
evidence `mapping.reached_before` reads). Such a hand-out, of an attempt no file or STARTED
event names, is entered as `{key}#earlier` to an unknown worker, at the time the activity was
scheduled: that it happened is known, not when, nor to whom. Every time is turned from the
server's wall clock to this machine's monotonic clock by `offset` (wall minus monotonic, read
once). Another mapping on Temporal whose activities are not this one's tool activity (Pydantic
AI's) says how its activities name their calls (`Activities`), and the rest is read the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.enums.v1 import PendingActivityState, TimeoutType
from temporalio.api.failure.v1 import Failure
from temporalio.api.history.v1 import (
    ActivityTaskCompletedEventAttributes,
    ActivityTaskScheduledEventAttributes,
    HistoryEvent,
)
from temporalio.api.workflow.v1 import PendingActivityInfo

from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import RunEndSeen, ServerLog
from atmostonce.engines.temporal import mapping
from atmostonce.engines.temporal.workflows import deadline_summary
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.protocol import TimerKind

UNKNOWN_WORKER = "(unknown worker)"
"""The worker of a hand-out known only from a later attempt's failure."""
_DEADLINE = deadline_summary("")
_PASSED = REPLY_TEXT[ApprovalReply.DEADLINE_PASSED]


@dataclass(frozen=True)
class Activities:
    """How a mapping's activities name their calls: `call_of` gives the call's key and tool a
    scheduled activity runs, or None for an activity that runs no tool call (another mapping's
    model request); `returned` says whether a completed one's tool returned rather than
    reported a failure."""

    call_of: Callable[[ActivityTaskScheduledEventAttributes], tuple[str, str] | None]
    returned: Callable[[ActivityTaskCompletedEventAttributes], bool]


def _tool_job(a: ActivityTaskScheduledEventAttributes) -> tuple[str, str]:
    return a.activity_id, str(_first(a.input).get("tool", ""))


TOOL_ACTIVITY = Activities(_tool_job, lambda completed: True)
"""This mapping's tool activity: its id is the call's key, its input a `ToolJob`, and a failure
the tool reports fails it (`mapping.TOOL_FAILED_TYPE`)."""


@dataclass
class Fetched:
    """One workflow's history, and its activities still pending, as read at the end."""

    workflow_id: str
    events: list[HistoryEvent]
    pending: list[PendingActivityInfo] = field(default_factory=list)


@dataclass
class _Found:
    entries: list[tuple[float, int, h.Entry]] = field(default_factory=list)
    handed: set[tuple[str, str]] = field(default_factory=set)
    earlier: dict[str, tuple[float, str, str]] = field(default_factory=dict)
    """Activities whose closing failure carries an earlier attempt's: key -> (scheduled at,
    tool, the closing attempt or "" when it never started)."""
    from_history: int = 0
    from_files: int = 0
    from_causes: int = 0

    def add(self, entry: h.Entry) -> None:
        self.entries.append((entry.at, len(self.entries), entry))

    def hand_out(self, at: float, worker: str, attempt: str, key: str, tool: str,
                 number: int = 0) -> bool:
        if (attempt, worker) in self.handed:
            return False
        self.handed.add((attempt, worker))
        self.add(h.HandedOut(at, worker, attempt, key, tool, True, key, True, number))
        return True


def server_log(histories: Sequence[Fetched], events_files: Iterable[Path],
               offset: float, activities: Activities = TOOL_ACTIVITY) -> ServerLog:
    """The ServerLog of one chaos run (see the module docstring)."""
    log = ServerLog()
    found = _Found()
    for fetched in histories:
        _history(fetched, offset, found, log, activities)
    for path in events_files:
        _events_file(path, found, log)
    _earlier_attempts(found)
    found.entries.sort(key=lambda item: (item[0], item[1]))
    log.entries = [entry for _, _, entry in found.entries]
    log.durable.sort()
    total = found.from_history + found.from_files + found.from_causes
    log.notes.append(
        f"{total} hand-outs: {found.from_history} from ActivityTaskStarted events, "
        f"{found.from_files} only from the workers' events files (Temporal's history keeps only "
        f"the last attempt's STARTED), {found.from_causes} only from a closing failure's cause "
        "(an earlier attempt started, its worker and time unknown); the order of a start's "
        "record and the worker's task (D-5) is Temporal's own and not observable from outside")
    return log


def _history(fetched: Fetched, offset: float, found: _Found, log: ServerLog,
             activities: Activities) -> None:
    scheduled: dict[int, tuple[str, str]] = {}
    by_id: dict[str, tuple[str, str]] = {}
    scheduled_at: dict[int, float] = {}
    started: dict[int, tuple[str, str]] = {}
    timers: dict[int, str] = {}
    answers: dict[str, tuple[float, str, bool]] = {}
    taken: dict[str, float] = {}
    """Calls whose approval the workflow took an answer for, and when."""
    expired: set[str] = set()
    """Calls whose deadline took effect: its timer fired, or an answer found it passed."""
    task_started = 0.0
    for event in fetched.events:
        at = _monotonic(event.event_time, offset)
        log.durable.append(at)
        kind = event.WhichOneof("attributes")
        if kind == "workflow_task_started_event_attributes":
            task_started = at
        elif kind == "activity_task_scheduled_event_attributes":
            a = event.activity_task_scheduled_event_attributes
            call = activities.call_of(a)
            if call is None:
                continue
            scheduled[event.event_id] = by_id[a.activity_id] = call
            scheduled_at[event.event_id] = at
        elif kind == "activity_task_started_event_attributes":
            s = event.activity_task_started_event_attributes
            if s.scheduled_event_id not in scheduled:
                continue
            key, tool = scheduled[s.scheduled_event_id]
            attempt = f"{key}#{s.attempt}"
            started[event.event_id] = (s.identity, attempt)
            if found.hand_out(at, s.identity, attempt, key, tool, s.attempt):
                found.from_history += 1
        elif kind == "activity_task_completed_event_attributes":
            c = event.activity_task_completed_event_attributes
            _result(found, log, at, started.get(c.started_event_id), activities.returned(c))
        elif kind == "activity_task_failed_event_attributes":
            f = event.activity_task_failed_event_attributes
            if f.failure.application_failure_info.type == mapping.TOOL_FAILED_TYPE:
                _result(found, log, at, started.get(f.started_event_id), False)
        elif kind == "activity_task_timed_out_event_attributes":
            t = event.activity_task_timed_out_event_attributes
            if t.scheduled_event_id not in scheduled:
                continue
            where = started.get(t.started_event_id)
            if t.failure.HasField("cause"):
                key, tool = scheduled.get(t.scheduled_event_id, ("", ""))
                closing = where[1] if where is not None else ""
                found.earlier[key] = (scheduled_at.get(t.scheduled_event_id, at), tool, closing)
            if where is not None and _timeout(t.failure) == TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE:
                found.add(h.Cancelled(at, *where))
        elif kind == "timer_started_event_attributes":
            summary = _text(event.user_metadata.summary)
            if summary.startswith(_DEADLINE):
                key = summary[len(_DEADLINE):]
                timers[event.event_id] = key
                found.add(h.TimerStarted(at, TimerKind.APPROVAL_DEADLINE, key, key))
        elif kind == "timer_fired_event_attributes":
            key = timers.get(event.timer_fired_event_attributes.started_event_id, "")
            if key and key not in taken and key not in expired:
                expired.add(key)
                found.add(h.TimerFired(at, TimerKind.APPROVAL_DEADLINE, key, key))
        elif kind == "workflow_execution_update_accepted_event_attributes":
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == "answer":
                given = _first(request.input.args)
                answers[request.meta.update_id] = (task_started, str(given.get("key", "")),
                                                   bool(given.get("approve")))
        elif kind == "workflow_execution_update_completed_event_attributes":
            done = event.workflow_execution_update_completed_event_attributes
            answer = answers.pop(done.meta.update_id, None)
            reply = _first(done.outcome.success) if done.outcome.HasField("success") else {}
            if answer is None:
                continue
            took, key, approve = answer
            if reply.get("accepted") is True:
                taken.setdefault(key, took)
                found.add(h.ApprovalAnswered(took, key, approve, True,
                                             REPLY_TEXT[ApprovalReply.ACCEPTED]))
            elif reply.get("text") == _PASSED and key not in taken and key not in expired:
                expired.add(key)
                found.add(h.TimerFired(took, TimerKind.APPROVAL_DEADLINE, key, key))
    for pending in fetched.pending:
        call = by_id.get(pending.activity_id)
        if call is not None and \
                pending.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED:
            at = _monotonic(pending.last_started_time, offset)
            key, tool = call
            attempt = f"{key}#{pending.attempt}"
            if found.hand_out(at, pending.last_worker_identity, attempt, key, tool,
                              pending.attempt):
                found.from_history += 1


def _earlier_attempts(found: _Found) -> None:
    """A hand-out for each activity whose closing failure proves an earlier attempt started,
    when no STARTED event nor worker's note names an attempt other than the closing one."""
    for key, (at, tool, closing) in found.earlier.items():
        prefix = f"{key}#"
        if any(a.startswith(prefix) and a != closing for a, _ in found.handed):
            continue
        if found.hand_out(at, UNKNOWN_WORKER, f"{key}#earlier", key, tool):
            found.from_causes += 1


def _result(found: _Found, log: ServerLog, at: float, where: tuple[str, str] | None,
            ok: bool) -> None:
    if where is None:
        return
    worker, attempt = where
    found.add(h.ResultDelivered(at, worker, attempt, ok))
    log.run_ends.append(RunEndSeen(at, worker, attempt, ok))


def _events_file(path: Path, found: _Found, log: ServerLog) -> None:
    """A worker's own notes: hand-outs Temporal's history lost, and the ends of runs."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        try:
            note = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill
        if not isinstance(note, dict):
            continue
        at = float(note.get("at", 0.0))
        worker = str(note.get("worker", ""))
        attempt = str(note.get("attempt", ""))
        kind = note.get("type")
        if kind == "started":
            if found.hand_out(at, worker, attempt, str(note.get("key", "")),
                              str(note.get("tool", ""))):
                found.from_files += 1
        elif kind == "ended":
            ok = note.get("ok")
            log.run_ends.append(RunEndSeen(at, worker, attempt,
                                           ok if isinstance(ok, bool) else None))
        elif kind == "fenced":
            log.run_ends.append(RunEndSeen(at, worker, attempt))


def _monotonic(stamp: Timestamp, offset: float) -> float:
    return stamp.seconds + stamp.nanos / 1e9 - offset


def _timeout(failure: Failure) -> int:
    return int(failure.timeout_failure_info.timeout_type)


def _first(payloads: Payloads) -> dict[str, Any]:
    """The first payload's JSON object, or {}."""
    if not payloads.payloads:
        return {}
    value = _decoded(payloads.payloads[0])
    return value if isinstance(value, dict) else {}


def _text(payload: Payload) -> str:
    value = _decoded(payload)
    return value if isinstance(value, str) else ""


def _decoded(payload: Payload) -> object:
    if payload.metadata.get("encoding") != b"json/plain":
        return None
    try:
        return json.loads(payload.data)
    except ValueError:
        return None
