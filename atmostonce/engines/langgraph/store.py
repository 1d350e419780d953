"""The application store as LangGraph's agent processes use it: a session's LangGraph thread id
is the session id, an agent process claims the threads it runs, and every change it must look
at (a call asked, an answer, a user message) bumps the thread's version, which the process
polls."""

from __future__ import annotations

import sqlite3

from atmostonce.engines.appstore import AppStore, CallRow, call_row


class ThreadedStore(AppStore):
    """The store with LangGraph's thread claims and versions (see the module docstring)."""

    def _changed(self, db: sqlite3.Connection, thread: str) -> None:
        db.execute("UPDATE threads SET version = version + 1 WHERE id = ?", (thread,))

    def claim(self, owner: str) -> str | None:
        """Give the oldest thread nobody runs to `owner`; its id, or None. The write lock is
        taken only when there is a thread to take, so a process polling for threads seldom
        holds it."""
        with self._read() as db:
            if db.execute("SELECT 1 FROM threads WHERE owner IS NULL").fetchone() is None:
                return None
        with self._write() as db:
            found = db.execute("SELECT id FROM threads WHERE owner IS NULL ORDER BY opened "
                               "LIMIT 1").fetchone()
            if found is None:
                return None
            db.execute("UPDATE threads SET owner = ? WHERE id = ?", (owner, found[0]))
            return str(found[0])

    def release(self, owner: str) -> list[str]:
        """The threads `owner` ran, now free for another agent process to resume."""
        with self._write() as db:
            threads = [r[0] for r in db.execute("SELECT id FROM threads WHERE owner = ?",
                                                (owner,))]
            db.execute("UPDATE threads SET owner = NULL WHERE owner = ?", (owner,))
        return threads

    def versions(self, owner: str) -> dict[str, int]:
        """The threads `owner` runs, each with its version."""
        with self._read() as db:
            return {r[0]: r[1] for r in db.execute(
                "SELECT id, version FROM threads WHERE owner = ?", (owner,))}

    def call(self, thread: str, call_id: str) -> CallRow | None:
        with self._read() as db:
            row = db.execute("SELECT * FROM calls WHERE thread = ? AND call_id = ?",
                             (thread, call_id)).fetchone()
        return call_row(row) if row is not None else None

    def owner(self, thread: str) -> str | None:
        """The agent process that runs the thread, if any."""
        with self._read() as db:
            found = db.execute("SELECT owner FROM threads WHERE id = ?", (thread,)).fetchone()
        return None if found is None else found[0]
