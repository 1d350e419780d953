"""A recorded history's counterexample as a message sequence chart: the agent, the executor,
each worker and the effect ledger as lanes, the entries of the broken call (and the faults
among them) as messages between them."""

from __future__ import annotations

from collections.abc import Sequence

from atmostonce.check.history import entries as h
from atmostonce.report.sequence import Message, sequence_svg
from atmostonce.report.timeline import natural

AGENT = "agent"
EXECUTOR = "executor"
LEDGER = "ledger"
MOST = 60
"""Messages drawn at most; a longer counterexample is cut, and the caption says so."""


def _worker(name: str) -> str:
    return f"worker {name}"


def _message(e: h.Entry) -> Message | None:
    if isinstance(e, h.CallAsked):
        return Message(AGENT, EXECUTOR, f"ask {e.tool} ({e.tool_call_id})", e.at)
    if isinstance(e, h.ApprovalAnswered):
        verb = "approve" if e.approve else "reject"
        return Message(AGENT, EXECUTOR, f"{verb}: {'taken' if e.ok else 'refused'}", e.at)
    if isinstance(e, h.HandedOut):
        return Message(EXECUTOR, _worker(e.worker), f"go-ahead {e.attempt}"
                       + ("" if e.sent else " (lost in a restart)"), e.at)
    if isinstance(e, h.Cancelled):
        return Message(EXECUTOR, _worker(e.worker), f"cancel {e.attempt}", e.at)
    if isinstance(e, h.StartDelivered):
        return Message(_worker(e.worker), EXECUTOR, f"started {e.attempt}", e.at)
    if isinstance(e, h.HeartbeatDelivered):
        return Message(_worker(e.worker), EXECUTOR, f"heartbeat {e.attempt}", e.at)
    if isinstance(e, h.ResultDelivered):
        return Message(_worker(e.worker), EXECUTOR,
                       f"{'returned' if e.ok else 'failed'} {e.attempt}", e.at)
    if isinstance(e, h.RunStarted):
        return Message(_worker(e.worker), LEDGER, f"run {e.run} starts (key {e.key})", e.at)
    if isinstance(e, h.RecordPublished):
        return Message(EXECUTOR, AGENT, f"record {e.status.value}", e.at)
    if isinstance(e, h.TimerFired):
        return Message(EXECUTOR, EXECUTOR, f"timer {e.kind.value}", e.at)
    if isinstance(e, h.WorkerCrashed):
        return Message(_worker(e.worker), _worker(e.worker), "CRASH", e.at)
    if isinstance(e, h.WorkerCut):
        return Message(_worker(e.worker), EXECUTOR, "connection cut", e.at)
    if isinstance(e, h.WorkerHealed):
        return Message(_worker(e.worker), EXECUTOR, "connection back", e.at)
    if isinstance(e, h.WorkerDeclaredLost):
        return Message(EXECUTOR, _worker(e.worker), "declared lost", e.at)
    if isinstance(e, h.ServerRestarted):
        return Message(EXECUTOR, EXECUTOR, "RESTART from the journal", e.at)
    return None


def _concerns(e: h.Entry, key: str, attempts: set[str], runs: set[int]) -> bool:
    """Whether the entry belongs to the call `key`, or is a fault (which may explain it)."""
    if isinstance(e, h.WorkerCrashed | h.WorkerCut | h.WorkerHealed | h.WorkerDeclaredLost
                  | h.ServerRestarted):
        return True
    if isinstance(e, h.HandedOut) and e.key == key:
        attempts.add(e.attempt)
        return True
    if isinstance(e, h.RunStarted) and e.key == key:
        runs.add(e.run)
        return True
    if isinstance(e, h.Cancelled | h.StartDelivered | h.HeartbeatDelivered | h.ResultDelivered):
        return e.attempt in attempts
    if isinstance(e, h.RunEnded | h.EffectApplied):
        return e.run in runs
    return getattr(e, "key", None) == key


def violation_chart(entries: Sequence[h.Entry], violation: h.HistoryViolation, title: str
                    ) -> tuple[str, str]:
    """The chart (SVG) of one violation, from the call's ask to the last entry it names (or
    the call's record, when that comes later), and a caption."""
    last = max(violation.positions, default=len(entries) - 1)
    last = next((i for i in range(last, len(entries))
                 if isinstance(entries[i], h.RecordPublished)
                 and entries[i].key == violation.key), last)  # type: ignore[attr-defined]
    attempts: set[str] = set()
    runs: set[int] = set()
    workers: dict[str, None] = {}
    messages: list[Message] = []
    for e in entries[: last + 1]:
        if violation.key and not _concerns(e, violation.key, attempts, runs):
            continue
        if isinstance(e, h.RunEnded):
            messages.append(Message(LEDGER, LEDGER, f"run {e.run} {e.end.value}", e.at))
            continue
        if isinstance(e, h.EffectApplied):
            verb = "applied" if e.applied else "dropped (repeated key)"
            messages.append(Message(LEDGER, LEDGER, f"write of run {e.run} {verb}", e.at))
            continue
        message = _message(e)
        if message is None:
            continue
        for lane in (message.sender, message.receiver):
            if lane.startswith("worker "):
                workers.setdefault(lane, None)
        messages.append(message)
    asked = next((i for i, m in enumerate(messages) if m.sender == AGENT), 0)
    messages = messages[asked:]
    cut = len(messages) > MOST
    shown = messages[-MOST:] if cut else messages
    lanes = [AGENT, EXECUTOR, *sorted(workers, key=natural), LEDGER]
    caption = f"{violation.property}: {violation.message}"
    if cut:
        caption += f" (the last {MOST} of {len(messages)} messages)"
    return sequence_svg(lanes, shown, title), caption
