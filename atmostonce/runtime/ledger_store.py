"""The effect ledger's SQLite file: its schema and header, and the services' rules.

Per tool the ledger plays the service that tool writes to: a keyed service drops a write whose
key it already applied (TC-EFF-IDEM, TC-KEY-3), a plain one applies every write, so a repeat
repeats the effect (TC-EFF-NONIDEM). A write past its lease deadline is refused (D-12), and so
is one of a run whose start is not on record. `ledger` serves the file to workers and readers.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from atmostonce.check.history.services import Service
from atmostonce.runtime import sqlite_file
from atmostonce.spec.errors import SpecError

APPLICATION = "atmostonce-ledger"
FORMAT = "1"

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE runs (id INTEGER PRIMARY KEY, worker TEXT NOT NULL, "
    "attempt TEXT NOT NULL, key TEXT NOT NULL, tool TEXT NOT NULL, started REAL NOT NULL, "
    "ended REAL, end_kind TEXT, output TEXT, UNIQUE (worker, attempt))",
    "CREATE TABLE writes (id INTEGER PRIMARY KEY, key TEXT NOT NULL, "
    "tool TEXT NOT NULL, worker TEXT NOT NULL, attempt TEXT NOT NULL, at REAL NOT NULL, "
    "applied INTEGER NOT NULL, fenced INTEGER NOT NULL, payload TEXT NOT NULL)",
    "CREATE INDEX runs_by_key ON runs (key)",
    "CREATE INDEX writes_by_key ON writes (key)",
)
_RUN_COLUMNS = "worker, attempt, key, tool, started, ended, end_kind, output"
_WRITE_COLUMNS = "key, tool, worker, attempt, at, applied, fenced, payload"


def _run_json(row: tuple[Any, ...]) -> dict[str, Any]:
    worker, attempt, key, tool, started, ended, end, output = row
    return {"worker": worker, "attempt": attempt, "key": key, "tool": tool,
            "started": started, "ended": ended, "end": end, "output": output}


def _write_json(row: tuple[Any, ...]) -> dict[str, Any]:
    key, tool, worker, attempt, at, applied, fenced, payload = row
    return {"key": key, "tool": tool, "worker": worker, "attempt": attempt, "at": at,
            "applied": bool(applied), "fenced": bool(fenced), "payload": payload}


class LedgerStore:
    """The ledger's SQLite file and the services' rules. An existing file is locked against a
    second ledger and must pass SQLite's integrity check and carry the ledger's header before
    anything writes to it; a missing one is made whole under a temporary name and linked into
    place. Every problem is a one-line SpecError and leaves the file as it was."""

    def __init__(self, path: Path, services: Mapping[str, Service]) -> None:
        self.path = Path(path)
        self.services = dict(services)
        created = _create(self.path) if not self.path.exists() else None
        if created is None:
            created = sqlite_file.lock("ledger", self.path, "ledger")
            try:
                _check_header(self.path)
            except BaseException:
                os.close(created)
                raise
        self._lock = created
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as error:
            os.close(self._lock)
            raise SpecError(f"ledger {self.path}: cannot use it: {error}") from None
        self.applied: dict[tuple[str, str], int] = {}
        for tool, key, count in self.conn.execute(
                "SELECT tool, key, COUNT(*) FROM writes WHERE applied GROUP BY tool, key"):
            self.applied[(tool, key)] = count
        self.started: set[tuple[str, str]] = set(self.conn.execute(
            "SELECT worker, attempt FROM runs"))
        self._dirty = False
        self.conn.execute("BEGIN")

    def service(self, tool: str) -> Service:
        return self.services.get(tool, Service.PLAIN)

    def run_started(self, worker: str, attempt: str, key: str, tool: str, at: float) -> None:
        self.conn.execute("INSERT OR IGNORE INTO runs (worker, attempt, key, tool, started) "
                          "VALUES (?, ?, ?, ?, ?)", (worker, attempt, key, tool, at))
        self.started.add((worker, attempt))
        self._dirty = True

    def run_ended(self, worker: str, attempt: str, end: str, output: str, at: float) -> None:
        self.conn.execute("UPDATE runs SET ended = ?, end_kind = ?, output = ? "
                          "WHERE worker = ? AND attempt = ? AND ended IS NULL",
                          (at, end, output, worker, attempt))
        self._dirty = True

    def write(self, worker: str, attempt: str, key: str, tool: str, payload: str, at: float,
              deadline: float | None) -> dict[str, Any]:
        """Apply or drop one write by the tool's service rule; refuse it after `deadline`, and
        refuse outright a write of a run whose start is not on record, so the ledger never
        shows an effect before the run that made it."""
        if (worker, attempt) not in self.started:
            raise SpecError(f"a write of {attempt} at {worker}, whose run start is not on "
                            "record: send run_started and wait for its reply first")
        mark = (tool, key)
        count = self.applied.get(mark, 0)
        fenced = deadline is not None and at > deadline
        applied = not fenced and not (self.service(tool) is Service.KEYED and count > 0)
        if applied:
            count += 1
            self.applied[mark] = count
        self.conn.execute(f"INSERT INTO writes ({_WRITE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                          (key, tool, worker, attempt, at, applied, fenced, payload))
        self._dirty = True
        return {"applied": applied, "fenced": fenced, "count": count}

    def runs(self, key: str | None = None) -> list[dict[str, Any]]:
        where, args = ("WHERE key = ?", (key,)) if key is not None else ("", ())
        return [_run_json(r) for r in self.conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY id", args)]

    def writes(self, key: str | None = None) -> list[dict[str, Any]]:
        where, args = ("WHERE key = ?", (key,)) if key is not None else ("", ())
        return [_write_json(r) for r in self.conn.execute(
            f"SELECT {_WRITE_COLUMNS} FROM writes {where} ORDER BY id", args)]

    def commit(self) -> None:
        if self._dirty:
            self.conn.execute("COMMIT")
            self.conn.execute("BEGIN")
            self._dirty = False

    def close(self) -> None:
        self.commit()
        self.conn.execute("COMMIT")
        self.abandon()

    def abandon(self) -> None:
        """Close without committing what is pending (after a failed write)."""
        self.conn.close()
        os.close(self._lock)


def _check_header(path: Path) -> None:
    conn = sqlite_file.open_read_only("ledger", path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        meta = dict(conn.execute("SELECT key, value FROM meta")) if "meta" in tables else {}
        missing = [t for t in ("runs", "writes") if t not in tables]
    except sqlite3.Error as error:
        raise SpecError(f"ledger {path}: the SQLite file is damaged: {error}") from None
    finally:
        conn.close()
    if meta.get("application") != APPLICATION or meta.get("format") != FORMAT:
        raise SpecError(f"ledger {path}: not an atmostonce ledger (format {FORMAT})")
    if missing:
        raise SpecError(f"ledger {path}: the header is there but table {missing[0]} is missing")


def _create(path: Path) -> int | None:
    """Make a new ledger at `path` and lock it; None when another process made one first."""
    if not path.parent.is_dir():
        raise SpecError(f"ledger {path}: the directory {path.parent} does not exist")
    temp = path.with_name(f".{path.name}.{os.getpid()}.new")
    temp.unlink(missing_ok=True)
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                             [("application", APPLICATION), ("format", FORMAT)])
            conn.execute("COMMIT")
        finally:
            conn.close()
        lock = sqlite_file.lock("ledger", temp, "ledger")
        try:
            os.link(temp, path)
        except FileExistsError:
            os.close(lock)
            return None
        finally:
            for leftover in (temp, temp.with_name(temp.name + "-wal"),
                             temp.with_name(temp.name + "-shm")):
                leftover.unlink(missing_ok=True)
    except (sqlite3.Error, OSError) as error:
        raise SpecError(f"ledger {path}: cannot create it: {error}") from None
    return lock

