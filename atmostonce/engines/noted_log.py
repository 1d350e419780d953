"""The server-log entries an engine that hands nothing out (LangGraph, DBOS) gets from its agent
processes' notes (`notes`) and the application store's approval inbox (`appstore`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import RunEndSeen
from atmostonce.engines.appstore import ApprovalRow
from atmostonce.engines.notes import read_notes
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.protocol import TimerKind

_ACCEPTED = REPLY_TEXT[ApprovalReply.ACCEPTED]


@dataclass
class Noted:
    """What the notes say: a durable `HandedOut` for each `started` note, a run end for each
    `ended` note, and for each attempt in `durable` a `ResultDelivered` at its earliest
    `delivering` note (a note whose write never landed is left out by not being durable)."""

    hand_outs: list[h.Entry] = field(default_factory=list)
    run_ends: list[RunEndSeen] = field(default_factory=list)
    results: dict[str, h.ResultDelivered] = field(default_factory=dict)


def noted(notes_files: Iterable[Path], durable: set[str] | None) -> Noted:
    """The entries of every whole note in `notes_files`; with `durable` None no result is
    taken from the notes (something else stands for them)."""
    seen = Noted()
    for path in notes_files:
        for note in read_notes(path):
            at = float(note.get("at", 0.0))
            worker = str(note.get("worker", ""))
            attempt = str(note.get("attempt", ""))
            kind = note.get("type")
            ok = note.get("ok")
            if kind == "started":
                key = str(note.get("key", ""))
                seen.hand_outs.append(h.HandedOut(at, worker, attempt, key,
                                                  str(note.get("tool", "")), True, key))
            elif kind == "ended":
                seen.run_ends.append(RunEndSeen(at, worker, attempt,
                                                ok if isinstance(ok, bool) else None))
            elif kind == "delivering" and durable is not None and attempt in durable:
                first = seen.results.get(attempt)
                if first is None or at < first.at:
                    seen.results[attempt] = h.ResultDelivered(at, str(note.get("of", worker)),
                                                              attempt, ok is True)
    return seen


def inbox_entries(approvals: Iterable[ApprovalRow]) -> list[h.Entry]:
    """From the approval inbox: `TimerStarted` for each call that waits (its deadline starts at
    the ask), `ApprovalAnswered` for each answer taken, `TimerFired` when the deadline was found
    passed."""
    entries: list[h.Entry] = []
    for row in approvals:
        entries.append(h.TimerStarted(row.asked, TimerKind.APPROVAL_DEADLINE, row.key, row.key))
        if row.answered is not None and row.approve is not None:
            entries.append(h.ApprovalAnswered(row.answered, row.key, row.approve, True,
                                              _ACCEPTED))
        if row.expired is not None:
            entries.append(h.TimerFired(row.expired, TimerKind.APPROVAL_DEADLINE, row.key,
                                        row.key))
    return entries
