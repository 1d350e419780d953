"""What the reference server alone saw, read from its journal and off its wire: the `ServerLog`
the reference adapter gives the chaos harness.

The journal says, durably and in the server's order, when each attempt was queued and handed
to which worker, which answers the server took, which deadlines fired, how attempts ended and
which runs the server heard were over. The proxy between each worker and the server adds what
a journal cannot say: the key each go-ahead carried, and whether its hand-out was durable when
the go-ahead arrived, read from the journal by `JournalWatch` at that moment (D-5). That check
never blames a server that keeps D-5, but it can miss one that does not: a hand-out that
becomes durable between the go-ahead leaving the server and the proxy reading the journal
(a fraction of a millisecond apart) looks durable in time, and group commit often makes a
premature go-ahead wait for the batch its hand-out is in. The conformance and simulation
layers check D-5 on the executor's own commands, exactly.

The server's liveness log (`atmostonce.runtime.liveness_log`) adds each worker's connections
and heartbeats as the executor took them, at its clock: `WorkerConnected` and
`HeartbeatDelivered`. They come before the journal's entries of the same moment, since each
is the cause: a worker that connects again ends the attempt it held with the same time
(A-HEARD-KEEPS-ATTEMPT).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import RunEndSeen, ServerLog
from atmostonce.runtime.liveness_log import LivenessNote
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.protocol import JSON, TimerKind

Entry = dict[str, JSON]


@dataclass(frozen=True)
class GoAheadSeen:
    """A go-ahead the server sent a worker, as the proxy received it."""

    at: float
    worker: str
    attempt: str
    key: str
    tool: str
    persisted: bool
    """Its hand-out was already in the journal when the go-ahead arrived (D-5)."""


@dataclass(frozen=True)
class WireSeen:
    """A worker's `started`, as the proxy received it."""

    at: float
    worker: str
    attempt: str = ""


class JournalWatch:
    """Reads the journal's new entries as they become durable and remembers every hand-out,
    so a go-ahead can be checked against it the moment it is seen. Used on one thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._seq = 0
        self._handed: set[tuple[str, str]] = set()

    def handed(self, attempt: str, worker: str) -> bool:
        """Whether the journal holds the hand-out of `attempt` to `worker` now."""
        if (attempt, worker) in self._handed:
            return True
        self._read_new()
        return (attempt, worker) in self._handed

    def _read_new(self) -> None:
        if self._conn is None:
            if not self.path.exists():
                return
            self._conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                         isolation_level=None)
        try:
            rows = self._conn.execute("SELECT seq, entry FROM entries WHERE seq > ? "
                                      "ORDER BY seq", (self._seq,)).fetchall()
        except sqlite3.Error:
            return
        for seq, text in rows:
            self._seq = seq
            if '"handed"' not in text:
                continue
            entry = json.loads(text)
            if entry.get("type") == "handed":
                self._handed.add((str(entry.get("attempt")), str(entry.get("worker"))))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def server_log(journal: list[Entry], go_aheads: list[GoAheadSeen], liveness: list[LivenessNote],
               starts: list[WireSeen], finishes: list[RunEndSeen]) -> ServerLog:
    """The ServerLog of one run of the reference server, from its journal and its liveness
    log (every life of it, in order) and what the proxies saw."""
    log = ServerLog(run_ends=list(finishes))
    sent = {(g.attempt, g.worker): g for g in go_aheads}
    tools: dict[str, str] = {}
    holder: dict[str, str] = {}
    found: list[tuple[float, int, h.Entry]] = []

    def add(entry: h.Entry) -> None:
        found.append((entry.at, len(found), entry))

    for note in liveness:
        add(h.HeartbeatDelivered(note.at, note.worker, note.attempt) if note.attempt
            else h.WorkerConnected(note.at, note.worker))
    for raw in journal:
        at = float(_number(raw.get("at")))
        log.durable.append(at)
        kind = raw.get("type")
        key = str(raw.get("key", ""))
        attempt = str(raw.get("attempt", ""))
        if kind == "ask":
            tools[key] = str(raw.get("tool"))
        elif kind == "queued":
            add(h.TimerStarted(at, TimerKind.QUEUE_TIMEOUT, attempt, key))
        elif kind == "handed":
            worker = str(raw.get("worker"))
            holder[attempt] = worker
            seen = sent.pop((attempt, worker), None)
            add(h.HandedOut(at, worker, attempt, seen.key if seen else key, tools.get(key, ""),
                            seen.persisted if seen else True, key, seen is not None))
        elif kind == "approval":
            state = raw.get("state")
            if state == "expired":
                add(h.TimerFired(at, TimerKind.APPROVAL_DEADLINE, key, key))
            else:
                add(h.ApprovalAnswered(at, key, state == "approved", True,
                                       REPLY_TEXT[ApprovalReply.ACCEPTED]))
        elif kind == "ended":
            _ended(raw, at, attempt, holder.get(attempt, ""), add, log)
        elif kind == "worker_lost":
            add(h.WorkerDeclaredLost(at, str(raw.get("worker"))))
        elif kind == "run_over":
            log.run_ends.append(RunEndSeen(at, str(raw.get("worker")), attempt))
    for g in sent.values():
        call = g.attempt.rpartition("#")[0] or g.key
        add(h.HandedOut(g.at, g.worker, g.attempt, g.key, g.tool, False, call, True))
    for w in starts:
        add(h.StartDelivered(w.at, w.worker, w.attempt))
    found.sort(key=lambda item: (item[0], item[1]))
    log.entries = [entry for _, _, entry in found]
    log.notes.extend(_notes(log.entries, len(go_aheads)))
    return log


def _ended(raw: Entry, at: float, attempt: str, worker: str,
           add: Callable[[h.Entry], None], log: ServerLog) -> None:
    """An attempt's end: a cancel or time-out, a result that reached the executor, or the
    loss of its worker."""
    end = raw.get("end")
    if end == "cancelled":
        add(h.Cancelled(at, worker, attempt))
    elif end in ("returned", "tool_failed"):
        ok = end == "returned"
        add(h.ResultDelivered(at, worker, attempt, ok))
        log.run_ends.append(RunEndSeen(at, worker, attempt, ok))
    elif end == "worker_lost":
        add(h.WorkerDeclaredLost(at, worker))


def _notes(entries: list[h.Entry], go_aheads: int) -> list[str]:
    handed = [e for e in entries if isinstance(e, h.HandedOut)]
    early = sum(1 for e in handed if not e.persisted_first)
    unsent = sum(1 for e in handed if not e.sent)
    return [f"{len(handed)} hand-outs in the journal and on the wire; {go_aheads} go-aheads "
            f"seen by the proxies, {early} of them before their hand-out was durable in the "
            "journal when they arrived (D-5); "
            f"{unsent} hand-outs whose go-ahead never reached a proxy (the server died or the "
            "connection was cut first)"]


def _number(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return 0.0
