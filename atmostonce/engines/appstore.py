"""The application's own store beside an engine's durable state: what a team keeps itself when
it builds the Tool Calls page on an engine that has no tool-call records of its own (LangGraph,
DBOS), in one SQLite file that the session API and every agent process share.

- `policies`: each tool's ToolPolicy and framework hints, as last set (TC-POL-1);
- `threads`: one per session, with the session's default effect; on an engine whose agent
  processes claim sessions, also the process that runs it (`owner`) and a `version` bumped by
  every change that process must look at (`ThreadedStore`);
- `calls`: the scripted model's answers, in the order they were asked: each call with the
  effective policy and approval deadline it kept at ask time (TC-SNAP-1, D-32);
- `approvals`: the approval inbox of the calls that wait for one, answered by D-7's table with
  the deadline judged by the clock: the inbox decides, the engine's own wait only wakes the run;
- `user_messages`: `send_user_message`'s texts.

Every time is `time.monotonic()`, the clock the harness and the ledger read, taken once the
write holds the lock. Each operation opens its own connection: a write takes the lock at once
(`BEGIN IMMEDIATE`) and waits up to `BUSY` seconds for a process that holds it, even one paused
mid-write.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atmostonce.runtime.client import AnswerReply
from atmostonce.runtime.codec import hints_json, hints_of, policy_json, policy_of
from atmostonce.spec.approval import (
    REPLY_TEXT,
    ApprovalEvent,
    ApprovalReply,
    ApprovalState,
)
from atmostonce.spec.approval import answer as approval_answer
from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import build_key
from atmostonce.spec.policy import (
    EffectClass,
    ToolHints,
    ToolPolicy,
    choose_deadline,
    resolve_policy,
    retries_allowed,
)
from atmostonce.spec.protocol import ExecutorConfig

BUSY = 30.0
"""Seconds an operation waits for the write lock another process holds."""

_SCHEMA = """
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS policies (tool TEXT PRIMARY KEY, policy TEXT, hints TEXT);
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY, default_effect TEXT, opened REAL NOT NULL, owner TEXT,
    version INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY, thread TEXT NOT NULL, turn TEXT NOT NULL, call_id TEXT NOT NULL,
    tool TEXT NOT NULL, arguments TEXT NOT NULL, effect TEXT NOT NULL,
    requires_approval INTEGER NOT NULL, asked REAL NOT NULL, seq INTEGER NOT NULL,
    UNIQUE (thread, call_id));
CREATE TABLE IF NOT EXISTS approvals (
    key TEXT PRIMARY KEY, thread TEXT NOT NULL, state TEXT NOT NULL, asked REAL NOT NULL,
    deadline REAL NOT NULL, answered REAL, approve INTEGER, expired REAL);
CREATE TABLE IF NOT EXISTS user_messages (
    thread TEXT NOT NULL, seq INTEGER NOT NULL, text TEXT NOT NULL, sent REAL NOT NULL,
    PRIMARY KEY (thread, seq));
"""


@dataclass(frozen=True)
class CallRow:
    """One call the model asked, with what it kept at ask time."""

    key: str
    thread: str
    turn: str
    call_id: str
    tool: str
    arguments: str
    effect: EffectClass
    requires_approval: bool
    asked: float
    seq: int

    @property
    def retries_allowed(self) -> bool:
        return retries_allowed(self.effect)


@dataclass(frozen=True)
class ApprovalRow:
    """One call's entry in the approval inbox."""

    key: str
    thread: str
    state: ApprovalState
    asked: float
    deadline: float
    """When the deadline passes, on the monotonic clock."""
    answered: float | None
    """When the answer that decided was taken (a person's approval or rejection)."""
    approve: bool | None
    expired: float | None
    """When the deadline was found passed and the call rejected."""


class AppStore:
    """The store in the SQLite file at `path` (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=BUSY, isolation_level=None)

    def setup(self) -> None:
        with self._read() as db:
            db.executescript(_SCHEMA)

    def _changed(self, db: sqlite3.Connection, thread: str) -> None:
        """A change to `thread` that the process running it must look at, inside the write."""

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        db = self._connect()
        try:
            yield db
        finally:
            db.close()

    # -- the session API's writes -------------------------------------------------------------

    def set_policy(self, tool: str, policy: ToolPolicy | None, hints: ToolHints | None) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO policies VALUES (?, ?, ?)",
                       (tool, json.dumps(policy_json(policy)), json.dumps(hints_json(hints))))

    def open_session(self, thread: str, default_effect: EffectClass | None) -> None:
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO threads (id, default_effect, opened) "
                       "VALUES (?, ?, ?)",
                       (thread, default_effect.value if default_effect else None,
                        time.monotonic()))

    def ask(self, thread: str, turn: str, call_id: str, tool: str, arguments: str,
            config: ExecutorConfig) -> str:
        """Take the model's call with the policy in force now; the call's key once it is
        committed. Asking again with the same ids changes nothing."""
        key = build_key(thread, turn, call_id)
        with self._write() as db:
            now = time.monotonic()
            if db.execute("SELECT 1 FROM calls WHERE key = ?", (key,)).fetchone():
                return key
            found = db.execute("SELECT default_effect FROM threads WHERE id = ?",
                               (thread,)).fetchone()
            if found is None:
                raise SpecError(f"no session {thread!r}: open it first")
            default = EffectClass.parse(found[0]) if found[0] is not None else None
            policy, hints = _statement(db, tool)
            effective = resolve_policy(policy, hints, default)
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM calls").fetchone()[0]
            db.execute("INSERT INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (key, thread, turn, call_id, tool, arguments, effective.effect.value,
                        int(effective.requires_approval), now, seq))
            if effective.requires_approval:
                wait = choose_deadline(None, policy.approval_deadline if policy else None,
                                       config.approval_deadline)
                db.execute("INSERT INTO approvals (key, thread, state, asked, deadline) "
                           "VALUES (?, ?, ?, ?, ?)",
                           (key, thread, ApprovalState.WAITING.value, now, now + wait))
            self._changed(db, thread)
        return key

    def answer(self, key: str, approve: bool) -> AnswerReply:
        """A person's answer, by D-7's table: the first answer or the deadline decides."""
        event = ApprovalEvent.APPROVE if approve else ApprovalEvent.REJECT
        with self._write() as db:
            now = time.monotonic()
            row = db.execute("SELECT thread, state, deadline FROM approvals WHERE key = ?",
                             (key,)).fetchone()
            if row is None:
                if db.execute("SELECT 1 FROM calls WHERE key = ?", (key,)).fetchone():
                    return _reply(ApprovalReply.NOT_REQUIRED)
                return AnswerReply(False, f"no call {key}")
            thread, state_text, deadline = row
            state = ApprovalState(state_text)
            if state is ApprovalState.WAITING and now >= deadline:
                state = ApprovalState.EXPIRED
                db.execute("UPDATE approvals SET state = ?, expired = ? WHERE key = ?",
                           (state.value, now, key))
                self._changed(db, thread)
            new, reply = approval_answer(state, event)
            if reply is ApprovalReply.ACCEPTED:
                db.execute("UPDATE approvals SET state = ?, answered = ?, approve = ? "
                           "WHERE key = ?", (new.value, now, int(approve), key))
                self._changed(db, thread)
            return _reply(reply)

    def add_user_message(self, thread: str, text: str) -> bool:
        with self._write() as db:
            now = time.monotonic()
            if db.execute("SELECT 1 FROM threads WHERE id = ?", (thread,)).fetchone() is None:
                return False
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM user_messages "
                             "WHERE thread = ?", (thread,)).fetchone()[0]
            db.execute("INSERT INTO user_messages VALUES (?, ?, ?, ?)",
                       (thread, seq, text, now))
            self._changed(db, thread)
        return True

    # -- the agent processes' writes ----------------------------------------------------------

    def expire(self, keys: list[str]) -> list[str]:
        """Reject, for their deadline, the calls of `keys` still waiting past it; those keys."""
        done: list[str] = []
        with self._write() as db:
            now = time.monotonic()
            for key in keys:
                changed = db.execute(
                    "UPDATE approvals SET state = ?, expired = ? WHERE key = ? AND state = ? "
                    "AND deadline <= ?", (ApprovalState.EXPIRED.value, now, key,
                                          ApprovalState.WAITING.value, now)).rowcount
                if changed:
                    done.append(key)
        return done

    # -- reads --------------------------------------------------------------------------------

    def calls(self, thread: str | None = None) -> list[CallRow]:
        """The calls of `thread` (of every thread when None), in the order they were asked."""
        with self._read() as db:
            rows = db.execute("SELECT * FROM calls" + (" WHERE thread = ?" if thread else "")
                              + " ORDER BY seq", (thread,) if thread else ()).fetchall()
        return [call_row(r) for r in rows]

    def approvals(self, thread: str | None = None) -> dict[str, ApprovalRow]:
        """The inbox of `thread` (of every thread when None), by call key."""
        with self._read() as db:
            rows = db.execute("SELECT key, thread, state, asked, deadline, answered, approve, "
                              "expired FROM approvals" + (" WHERE thread = ?" if thread else ""),
                              (thread,) if thread else ()).fetchall()
        return {r[0]: ApprovalRow(r[0], r[1], ApprovalState(r[2]), r[3], r[4], r[5],
                                  None if r[6] is None else bool(r[6]), r[7]) for r in rows}

    def user_messages(self, thread: str) -> list[tuple[str, str]]:
        """The session's user messages, in order: (an id that names each one for good, text)."""
        with self._read() as db:
            return [(user_message_id(thread, r[0]), r[1]) for r in db.execute(
                "SELECT seq, text FROM user_messages WHERE thread = ? ORDER BY seq", (thread,))]

def user_message_id(thread: str, seq: int) -> str:
    """The id of a session's user message: an engine that adds it again by id changes nothing."""
    return f"{thread}/user/{seq}"


def _statement(db: sqlite3.Connection, tool: str) -> tuple[ToolPolicy | None, ToolHints | None]:
    found = db.execute("SELECT policy, hints FROM policies WHERE tool = ?", (tool,)).fetchone()
    if found is None:
        return None, None
    return policy_of(json.loads(found[0])), hints_of(json.loads(found[1]))


def call_row(row: tuple[Any, ...]) -> CallRow:
    key, thread, turn, call_id, tool, arguments, effect, approval, asked, seq = row
    return CallRow(key, thread, turn, call_id, tool, arguments, EffectClass.parse(effect),
                   bool(approval), float(asked), int(seq))


def _reply(reply: ApprovalReply) -> AnswerReply:
    return AnswerReply(reply is ApprovalReply.ACCEPTED, REPLY_TEXT[reply])
