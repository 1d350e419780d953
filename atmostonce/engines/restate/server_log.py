"""What the Restate server saw, from the workers' events files and the server's journal
(`sys_journal`, read over the admin API's SQL at the end): the `ServerLog` of the Restate
adapter.

- `HandedOut` for each run of a call's `ctx.run` closure a worker noted (`tools.run_attempt`
  notes it before anything else). Restate journals the `Run` command before the closure runs,
  so each hand-out was durable first (D-5). Restate's journal keeps one `Run` command per
  `ctx.run` however often its closure ran, so the closure's second run after a crash is seen
  only in the files; a `Run` command no file names (its worker killed before the note) is
  entered as a hand-out `{key}#journal` to an unknown worker at the command's time: the run
  reached a worker, which one is not known.
- `ResultDelivered` when the run's result reached the server: the `Notification: Run` of the
  call's tool run, for the last run the files name.
- `TimerStarted`, `TimerFired` and `ApprovalAnswered` from the workers' notes of the approval's
  course (each note is itself a `ctx.run`, so a crash can note it twice: the first counts); an
  answer at the moment its handler judged it by (`ctx.time()`, journaled), which comes before
  the promise that lets the call run is resolved.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import RunEndSeen, ServerLog
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.protocol import TimerKind

UNKNOWN_WORKER = "(unknown worker)"
CLOCK_SLACK = 0.05
"""Seconds a journal time may read early against a worker's note: the journal's times are
the server's wall clock in milliseconds, put on the monotonic clock by a measured offset."""
TOOL_RUN = "tool"
"""The name of a call's tool run in the journal."""
JOURNAL_QUERY = (
    "SELECT i.target AS target, j.entry_type AS entry_type, j.name AS name, "
    "j.appended_at AS appended_at FROM sys_journal j JOIN sys_invocation i "
    "ON j.id = i.id WHERE i.target LIKE 'ToolCall/%/run_call' AND "
    "j.entry_type IN ('Command: Run', 'Notification: Run') ORDER BY j.id, j.\"index\"")


@dataclass
class _Found:
    entries: list[tuple[float, int, h.Entry]] = field(default_factory=list)
    handed: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """key -> (worker, attempt) of each hand-out, in order."""
    ended: dict[str, tuple[float, bool]] = field(default_factory=dict)
    """attempt -> when its run ended and whether the tool returned."""
    seen: set[tuple[str, str]] = field(default_factory=set)
    from_files: int = 0
    from_journal: int = 0

    def add(self, entry: h.Entry) -> None:
        self.entries.append((entry.at, len(self.entries), entry))

    def once(self, kind: str, key: str) -> bool:
        if (kind, key) in self.seen:
            return False
        self.seen.add((kind, key))
        return True


def server_log(journal: Sequence[dict[str, Any]], events_files: Iterable[Path],
               offset: float) -> ServerLog:
    """The ServerLog of one chaos run (see the module docstring); `offset` is this machine's
    wall clock minus its monotonic clock."""
    log = ServerLog()
    found = _Found()
    for path in events_files:
        _events_file(path, found, log, offset)
    _journal(journal, offset, found, log)
    found.entries.sort(key=lambda item: (item[0], item[1]))
    log.entries = [entry for _, _, entry in found.entries]
    log.durable.sort()
    log.notes.append(
        f"{found.from_files + found.from_journal} hand-outs: {found.from_files} from the "
        f"workers' notes, {found.from_journal} only from a Run command in Restate's journal "
        "(its worker unknown); Restate's journal keeps one Run command per ctx.run however "
        "often its closure ran")
    return log


def _events_file(path: Path, found: _Found, log: ServerLog, offset: float) -> None:
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
        wall = note.get("wall")
        at = float(wall) - offset if isinstance(wall, (int, float)) else float(note.get("at", 0))
        worker = str(note.get("worker", ""))
        attempt = str(note.get("attempt", ""))
        key = str(note.get("key", ""))
        kind = note.get("type")
        if kind == "started":
            found.handed.setdefault(key, []).append((worker, attempt))
            found.add(h.HandedOut(at, worker, attempt, key, str(note.get("tool", "")), True,
                                  key, True))
            found.from_files += 1
        elif kind == "ended":
            ok = note.get("ok")
            found.ended[attempt] = (at, bool(ok))
            log.run_ends.append(RunEndSeen(at, worker, attempt,
                                           ok if isinstance(ok, bool) else None))
        elif kind == "stopped":
            log.run_ends.append(RunEndSeen(at, worker, attempt))
        elif kind == "timer_started" and found.once(kind, key):
            found.add(h.TimerStarted(at, TimerKind.APPROVAL_DEADLINE, key, key))
        elif kind == "timer_fired" and found.once(kind, key):
            found.add(h.TimerFired(at, TimerKind.APPROVAL_DEADLINE, key, key))
        elif kind == "answer_taken" and found.once(kind, key):
            found.add(h.ApprovalAnswered(at, key, bool(note.get("approve")), True,
                                         REPLY_TEXT[ApprovalReply.ACCEPTED]))


def _journal(rows: Sequence[dict[str, Any]], offset: float, found: _Found,
             log: ServerLog) -> None:
    """Each call's tool run in the journal: its command, and its result's notification (the
    runs of a call's workflow are sequential, so the n-th notification is the n-th run's)."""
    commands: dict[str, list[tuple[str, float]]] = {}
    notices: dict[str, list[float]] = {}
    for row in rows:
        key = _key_of(str(row.get("target", "")))
        at = _monotonic(str(row.get("appended_at", "")), offset)
        if not key or at is None:
            continue
        log.durable.append(at)
        if row.get("entry_type") == "Command: Run":
            commands.setdefault(key, []).append((str(row.get("name", "")), at))
        else:
            notices.setdefault(key, []).append(at)
    for key, runs in commands.items():
        for n, (name, at) in enumerate(runs):
            if name != TOOL_RUN:
                continue
            handed = found.handed.get(key, [])
            if not handed:
                found.add(h.HandedOut(at, UNKNOWN_WORKER, f"{key}#journal", key, "", True, key,
                                      True))
                found.from_journal += 1
            delivered = notices.get(key, [])
            if n < len(delivered):
                _delivered(found, handed, delivered[n])


def _delivered(found: _Found, handed: list[tuple[str, str]], at: float) -> None:
    """The result that reached the server at `at`: the run of the call that ended last before
    it (the notes and the journal read one clock, give or take the offset's error)."""
    ends = [(found.ended[attempt][0], worker, attempt) for worker, attempt in handed
            if attempt in found.ended and found.ended[attempt][0] <= at + CLOCK_SLACK]
    if ends:
        _, worker, attempt = max(ends)
        found.add(h.ResultDelivered(at, worker, attempt, found.ended[attempt][1]))


def _key_of(target: str) -> str:
    """The call's key from a ToolCall invocation's target `ToolCall/{key}/run_call`."""
    head, _, rest = target.partition("/")
    key, _, handler = rest.rpartition("/")
    return key if head == "ToolCall" and handler == "run_call" else ""


def _monotonic(stamp: str, offset: float) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() - offset
    except ValueError:
        return None
