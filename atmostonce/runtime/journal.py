"""The executor's journal on disk: one SQLite file in WAL mode with synchronous=FULL.

The file holds a `meta` table that names it an atmostonce journal with a format version, and an
`entries` table of (sequence, JSON text), one row per `Persist` in the order the executor asked
for them. `open_journal` first reads and validates the whole file read-only, then lets the
caller recover from the entries, and only then opens it for writing; so a corrupt or foreign
file (not SQLite, no header, another format, an entry that is not JSON or that recovery
rejects) raises a one-line SpecError naming the file and the problem and is left byte for byte
as it was (D-8). `JournalFile.append` writes one batch in one fsynced transaction: the unit of
group commit (D-5).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from atmostonce.runtime import sqlite_file
from atmostonce.spec.errors import SpecError

Entry = dict[str, Any]
T = TypeVar("T")

APPLICATION = "atmostonce-journal"
FORMAT = 1
APPLICATION_ID = 0x41544D4F
"""SQLite's application_id header field: 'ATMO'."""

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE entries (seq INTEGER PRIMARY KEY, entry TEXT NOT NULL)",
)


def _error(path: Path, problem: str) -> SpecError:
    return SpecError(f"journal {path}: {problem}")


def read_journal(path: Path) -> list[Entry]:
    """Every entry of the journal at `path`, in order, read without writing anything (no side
    file is made unless a write-ahead log is already there); [] when there is no file yet.
    SpecError (one line, naming the file) for a file that is not a well-formed atmostonce
    journal."""
    path = Path(path)
    if not path.exists():
        return []
    conn = sqlite_file.open_read_only("journal", path)
    try:
        return _validated(path, conn)
    except sqlite3.Error as error:
        raise _error(path, f"the SQLite file is damaged: {error}") from None
    finally:
        conn.close()


def _validated(path: Path, conn: sqlite3.Connection) -> list[Entry]:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "meta" not in tables:
        raise _error(path, "a SQLite database without the atmostonce header (no meta table), "
                     "so not an atmostonce journal")
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("application") != APPLICATION:
        raise _error(path, f"the header names application {meta.get('application')!r}, "
                     f"not {APPLICATION!r}")
    if meta.get("format") != str(FORMAT):
        raise _error(path, f"journal format {meta.get('format')!r}; this version reads "
                     f"format {FORMAT}")
    if "entries" not in tables:
        raise _error(path, "the header is there but the entries table is missing")
    entries: list[Entry] = []
    for expected, (seq, text) in enumerate(conn.execute(
            "SELECT seq, entry FROM entries ORDER BY seq"), start=1):
        if seq != expected:
            raise _error(path, f"entry {expected} is missing (the next one is {seq})")
        try:
            entry = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            raise _error(path, f"entry {seq} is not a JSON object: {str(text)[:60]!r}")
        entries.append(entry)
    return entries


def create_journal(path: Path) -> None:
    """A new, empty journal at `path`, created whole under a temporary name and renamed into
    place, so a crash never leaves a half-made journal behind."""
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.new")
    temp.unlink(missing_ok=True)
    conn = sqlite3.connect(temp, isolation_level=None)
    try:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {FORMAT}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            raise _error(path, f"the file system does not support WAL mode (got {mode})")
        conn.execute("BEGIN")
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                         [("application", APPLICATION), ("format", str(FORMAT))])
        conn.execute("COMMIT")
    finally:
        conn.close()
    os.replace(temp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def lock_journal(path: Path) -> int:
    """An exclusive lock on the journal, held by the one server that writes it; released by
    the kernel when that process dies. Returns the descriptor that holds it."""
    return sqlite_file.lock("journal", path, "server")


class JournalFile:
    """A validated journal open for appending. Not thread-safe: one thread writes at a time."""

    def __init__(self, path: Path, entries: int, lock: int | None = None) -> None:
        self.path = Path(path)
        self.entries = entries
        self._lock = lock
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            self._conn.close()
            raise _error(self.path, f"cannot switch to WAL mode (got {mode})")
        self._conn.execute("PRAGMA synchronous = FULL")

    def append(self, lines: Sequence[str]) -> None:
        """Write entries (JSON text) in one transaction; durable when this returns (D-5)."""
        first = self.entries + 1
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT INTO entries (seq, entry) VALUES (?, ?)",
                             zip(range(first, first + len(lines)), lines, strict=True))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.entries += len(lines)

    def close(self) -> None:
        self._conn.close()
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def open_journal(path: Path, recover: Callable[[list[Entry]], T]) -> tuple[JournalFile, T]:
    """Validate the journal read-only, hand its entries to `recover`, and only when both
    succeed open it for appending (created when missing). A SpecError from `recover` comes back
    naming the file; the file is untouched in every failure (D-8)."""
    path = Path(path)
    lock = lock_journal(path) if path.is_file() else None
    try:
        entries = read_journal(path)
        try:
            result = recover(entries)
        except SpecError as error:
            raise _error(path, f"the executor cannot recover from it: {error}") from None
        if lock is None:
            create_journal(path)
            lock = lock_journal(path)
        return JournalFile(path, len(entries), lock), result
    except BaseException:
        if lock is not None:
            os.close(lock)
        raise
