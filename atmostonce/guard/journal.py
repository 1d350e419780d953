"""The guard's journal: one SQLite file that every process running the agent shares, holding
each call as kept at ask time, its approval, its attempts and its result, and the reports
reconcile sent. It is what makes the guard's promises hold across a crash:

- every write is a transaction that takes the write lock at once (`BEGIN IMMEDIATE`), so two
  processes never both begin the first attempt of a call;
- WAL with `synchronous=FULL`: a transaction is on disk when its commit returns, so the
  intent of an attempt is durable before its tool starts, and a kill after the commit cannot
  lose it.

Rows come back as frozen dataclasses; the rules that read them are in `moves` and `calls`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atmostonce.guard.calls import KeptCall
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, EffectivePolicy, PolicySource
from atmostonce.spec.records import AttemptEnd, FailureKind, Outcome, Record

BUSY = 30.0
"""Seconds a transaction waits for the write lock another process holds (one paused mid-write
holds it until it runs again)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY, session TEXT NOT NULL, turn TEXT NOT NULL, call_id TEXT NOT NULL,
    tool TEXT NOT NULL, arguments TEXT NOT NULL, effect TEXT NOT NULL,
    requires_approval INTEGER NOT NULL, source TEXT NOT NULL, asked REAL NOT NULL,
    deadline REAL, max_attempts INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS approvals (
    key TEXT PRIMARY KEY, state TEXT NOT NULL, answered REAL, approve INTEGER, expired REAL);
CREATE TABLE IF NOT EXISTS attempts (
    key TEXT NOT NULL, number INTEGER NOT NULL, label TEXT NOT NULL, started REAL NOT NULL,
    ended REAL, end_kind TEXT, PRIMARY KEY (key, number));
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, record TEXT NOT NULL, error TEXT NOT NULL, failure TEXT,
    output TEXT NOT NULL, attempt TEXT, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS reports (
    session TEXT NOT NULL, seq INTEGER NOT NULL, text TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (session, seq));
"""


@dataclass(frozen=True)
class Approval:
    """A call's approval as the journal holds it; `asked` and `deadline` are the call's."""

    key: str
    state: ApprovalState
    asked: float
    deadline: float
    answered: float | None
    """When the person's answer that decided was taken."""
    approve: bool | None
    expired: float | None
    """When the deadline was found passed and the call rejected."""


@dataclass(frozen=True)
class Attempt:
    """One attempt of a call: its intent, written before its tool started, and how it ended
    (None while it runs, or for ever when its process died)."""

    key: str
    number: int
    label: str
    started: float
    ended: float | None
    end: AttemptEnd | None


@dataclass(frozen=True)
class Finished:
    """A call's result, kept for good: its record and error, what the tool returned, and the
    attempt that produced it (None when none ran)."""

    key: str
    outcome: Outcome
    output: str
    attempt: str | None


class Journal:
    """The journal in the SQLite file at `path`, created on first use (see the module
    docstring). One connection per instance, shared by the threads of its process."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, timeout=BUSY, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as error:
            raise SpecError(f"the guard's journal {self.path} cannot be used: {error}") from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """A write transaction, committed (and on disk) when the block ends without error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[Tx]:
        """A consistent read of the journal."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield Tx(self._db)
            finally:
                self._db.execute("ROLLBACK")


class Tx:
    """The reads and writes of one transaction."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    # -- calls ------------------------------------------------------------------------------

    def add_call(self, call: KeptCall) -> bool:
        """Keep `call` unless its key is kept already; whether it was added."""
        parts = call.parts
        added = self._db.execute(
            "INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (call.key, parts.flow_id, parts.turn_id, parts.tool_call_id, call.tool,
             call.arguments, call.policy.effect.value, int(call.policy.requires_approval),
             call.policy.source.value, call.asked, call.deadline,
             call.max_attempts)).rowcount > 0
        if added and call.deadline is not None:
            self._db.execute("INSERT INTO approvals (key, state) VALUES (?, ?)",
                             (call.key, ApprovalState.WAITING.value))
        return added

    def call(self, key: str) -> KeptCall | None:
        row = self._db.execute("SELECT key, tool, arguments, effect, requires_approval, source, "
                               "asked, deadline, max_attempts FROM calls WHERE key = ?",
                               (key,)).fetchone()
        return None if row is None else _call(row)

    def calls(self, session: str | None = None) -> list[KeptCall]:
        """The calls of `session` (of every session when None), in the order they were asked."""
        rows = self._db.execute(
            "SELECT key, tool, arguments, effect, requires_approval, source, asked, deadline, "
            "max_attempts FROM calls" + (" WHERE session = ?" if session else "")
            + " ORDER BY asked, key",
            (session,) if session else ()).fetchall()
        return [_call(r) for r in rows]

    # -- approvals --------------------------------------------------------------------------

    def approval(self, key: str) -> Approval | None:
        found = self._approvals("WHERE a.key = ?", (key,))
        return found[0] if found else None

    def approvals(self, session: str | None = None) -> list[Approval]:
        if session is None:
            return self._approvals("", ())
        return self._approvals("WHERE c.session = ?", (session,))

    def _approvals(self, where: str, args: tuple[str, ...]) -> list[Approval]:
        rows = self._db.execute(
            "SELECT a.key, a.state, c.asked, c.deadline, a.answered, a.approve, a.expired "
            f"FROM approvals a JOIN calls c ON c.key = a.key {where} ORDER BY c.asked",
            args).fetchall()
        return [Approval(r[0], ApprovalState(r[1]), r[2], r[3], r[4],
                         None if r[5] is None else bool(r[5]), r[6]) for r in rows]

    def set_approval(self, key: str, state: ApprovalState, at: float,
                     approve: bool | None = None) -> None:
        """The approval's new state: answered by a person (`approve` set) or expired."""
        if approve is None:
            self._db.execute("UPDATE approvals SET state = ?, expired = ? WHERE key = ?",
                             (state.value, at, key))
        else:
            self._db.execute("UPDATE approvals SET state = ?, answered = ?, approve = ? "
                             "WHERE key = ?", (state.value, at, int(approve), key))

    # -- attempts and results ---------------------------------------------------------------

    def attempts(self, key: str | None = None) -> list[Attempt]:
        rows = self._db.execute(
            "SELECT key, number, label, started, ended, end_kind FROM attempts"
            + (" WHERE key = ?" if key else "") + " ORDER BY started, key, number",
            (key,) if key else ()).fetchall()
        return [Attempt(r[0], r[1], r[2], r[3], r[4],
                        None if r[5] is None else AttemptEnd(r[5])) for r in rows]

    def begin(self, key: str, number: int, label: str, at: float) -> Attempt:
        """The intent of attempt `number`: written before its tool starts."""
        self._db.execute("INSERT INTO attempts (key, number, label, started) VALUES (?, ?, ?, ?)",
                         (key, number, label, at))
        return Attempt(key, number, label, at, None, None)

    def end(self, attempt: Attempt, end: AttemptEnd, at: float) -> None:
        self._db.execute("UPDATE attempts SET ended = ?, end_kind = ? WHERE key = ? AND "
                         "number = ? AND ended IS NULL",
                         (at, end.value, attempt.key, attempt.number))

    def result(self, key: str) -> Finished | None:
        row = self._db.execute("SELECT key, record, error, failure, output, attempt FROM results "
                               "WHERE key = ?", (key,)).fetchone()
        return None if row is None else _finished(row)

    def results(self, session: str) -> list[Finished]:
        rows = self._db.execute(
            "SELECT r.key, r.record, r.error, r.failure, r.output, r.attempt FROM results r "
            "JOIN calls c ON c.key = r.key WHERE c.session = ? ORDER BY r.at, r.key",
            (session,)).fetchall()
        return [_finished(r) for r in rows]

    def tool_results(self) -> list[tuple[Finished, float]]:
        """Every result an attempt's tool gave (it returned, or reported a failure), with when
        the journal kept it; not the records the guard settled without one."""
        rows = self._db.execute(
            "SELECT r.key, r.record, r.error, r.failure, r.output, r.attempt, r.at FROM results r "
            "JOIN attempts a ON a.key = r.key AND a.label = r.attempt "
            "WHERE a.end_kind IN (?, ?) ORDER BY r.at",
            (AttemptEnd.RETURNED.value, AttemptEnd.TOOL_FAILED.value)).fetchall()
        return [(_finished(r[:6]), float(r[6])) for r in rows]

    def finish(self, result: Finished, at: float) -> Finished:
        """Keep `result` unless the call has one already; the call's result either way: the
        first result kept is the call's one record, never changed (TC-REC-1)."""
        o = result.outcome
        self._db.execute("INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (result.key, o.record.value, o.error,
                          o.failure.value if o.failure else None, result.output,
                          result.attempt, at))
        kept = self.result(result.key)
        assert kept is not None
        return kept

    # -- reports ----------------------------------------------------------------------------

    def add_report(self, session: str, text: str, at: float) -> None:
        self._db.execute("INSERT INTO reports VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM "
                         "reports WHERE session = ?), ?, ?)", (session, session, text, at))

    def reports(self, session: str) -> list[str]:
        return [r[0] for r in self._db.execute(
            "SELECT text FROM reports WHERE session = ? ORDER BY seq", (session,))]


def _call(row: tuple[Any, ...]) -> KeptCall:
    key, tool, arguments, effect, approval, source, asked, deadline, attempts = row
    policy = EffectivePolicy(EffectClass.parse(effect), bool(approval),
                             PolicySource(source))
    return KeptCall(str(key), str(tool), str(arguments), policy, float(asked),
                    None if deadline is None else float(deadline), int(attempts))


def _finished(row: tuple[Any, ...]) -> Finished:
    key, record, error, failure, output, attempt = row
    outcome = Outcome(Record.parse(record), str(error),
                      None if failure is None else FailureKind(failure))
    return Finished(str(key), outcome, str(output), None if attempt is None else str(attempt))

