"""The effect ledger service: its own process and SQLite file, the ground truth of what ran.

Tools write their effects here with the call's idempotency key, the tool, the worker and the
attempt. Per tool the ledger plays the service that tool writes to: a keyed service drops a
write whose key it already applied (TC-EFF-IDEM, TC-KEY-3), a plain one applies every write,
so a repeat repeats the effect (TC-EFF-NONIDEM). Workers also log when each run starts and how
it ends, so checkers and reconcile can ask which runs really happened, when, at which worker,
with which key (TC-REC-NOTRUN, TC-RCN-ASK). A write carries the worker's lease deadline on the
shared monotonic clock and is refused once it has passed, so a worker cut off from the server
cannot take effect after its lease (D-12).

Wire format (newline-delimited JSON, no hello); requests with an `id` get
`{"type": "reply", "id", "ok", "result" | "error"}`::

    {"op": "run_started", "worker", "attempt", "key", "tool"}
    {"op": "run_ended", "worker", "attempt", "end": "returned"|"tool_failed"|"stopped", "output"}
    {"op": "write", "id", "worker", "attempt", "key", "tool", "payload", "deadline"}
                                       -> {"applied": BOOL, "fenced": BOOL, "count": N}
    {"op": "runs", "id", "key"?}       -> {"runs": [...]}
    {"op": "writes", "id", "key"?}     -> {"writes": [...]}
    {"op": "lookup", "id", "key"}      -> {"key", "applied": N, "writes": [...], "runs": [...]}

Times (`at`, `started`, `ended`) are the ledger's `time.monotonic()`, the same clock the server
and the workers read on this machine. A run without an end was killed with its worker (or is
still going).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from atmostonce.check.services import Service
from atmostonce.executor.runtime import codec
from atmostonce.executor.runtime.tools import SERVICES
from atmostonce.executor.runtime.wire import LineProtocol, Message, listen, ready_line
from atmostonce.spec.errors import SpecError

log = logging.getLogger("atmostonce.ledger")

APPLICATION = "atmostonce-ledger"
FORMAT = "1"
RUN_ENDS = ("returned", "tool_failed", "stopped")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, worker TEXT NOT NULL, "
    "attempt TEXT NOT NULL, key TEXT NOT NULL, tool TEXT NOT NULL, started REAL NOT NULL, "
    "ended REAL, end_kind TEXT, output TEXT, UNIQUE (worker, attempt))",
    "CREATE TABLE IF NOT EXISTS writes (id INTEGER PRIMARY KEY, key TEXT NOT NULL, "
    "tool TEXT NOT NULL, worker TEXT NOT NULL, attempt TEXT NOT NULL, at REAL NOT NULL, "
    "applied INTEGER NOT NULL, fenced INTEGER NOT NULL, payload TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS runs_by_key ON runs (key)",
    "CREATE INDEX IF NOT EXISTS writes_by_key ON writes (key)",
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
    """The ledger's SQLite file and the services' rules."""

    def __init__(self, path: Path, services: Mapping[str, Service]) -> None:
        self.path = Path(path)
        self.services = dict(services)
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None)
            if existed:
                self._check_header()
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                self.conn.execute(statement)
            self.conn.executemany("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                                  [("application", APPLICATION), ("format", FORMAT)])
        except sqlite3.Error as error:
            raise SpecError(f"ledger {self.path}: cannot use it: {error}") from None
        self.applied: dict[tuple[str, str], int] = {}
        for tool, key, count in self.conn.execute(
                "SELECT tool, key, COUNT(*) FROM writes WHERE applied GROUP BY tool, key"):
            self.applied[(tool, key)] = count
        self._dirty = False
        self.conn.execute("BEGIN")

    def _check_header(self) -> None:
        tables = {r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        meta = dict(self.conn.execute("SELECT key, value FROM meta")) if "meta" in tables else {}
        if meta.get("application") != APPLICATION or meta.get("format") != FORMAT:
            self.conn.close()
            raise SpecError(f"ledger {self.path}: not an atmostonce ledger (format {FORMAT})")

    def service(self, tool: str) -> Service:
        return self.services.get(tool, Service.PLAIN)

    def run_started(self, worker: str, attempt: str, key: str, tool: str, at: float) -> None:
        self.conn.execute("INSERT OR IGNORE INTO runs (worker, attempt, key, tool, started) "
                          "VALUES (?, ?, ?, ?, ?)", (worker, attempt, key, tool, at))
        self._dirty = True

    def run_ended(self, worker: str, attempt: str, end: str, output: str, at: float) -> None:
        self.conn.execute("UPDATE runs SET ended = ?, end_kind = ?, output = ? "
                          "WHERE worker = ? AND attempt = ? AND ended IS NULL",
                          (at, end, output, worker, attempt))
        self._dirty = True

    def write(self, worker: str, attempt: str, key: str, tool: str, payload: str, at: float,
              deadline: float | None) -> dict[str, Any]:
        """Apply or drop one write by the tool's service rule; refuse it after `deadline`."""
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
        self.conn.close()


class LedgerService:
    """Serves the ledger's wire protocol; commits after each burst of messages."""

    def __init__(self, store: LedgerStore) -> None:
        self.store = store
        self.loop = asyncio.get_running_loop()
        self._commit_soon = False
        self.connections: set[LineProtocol] = set()
        self._ops: dict[str, Callable[[Message, float], dict[str, Any] | None]] = {
            "run_started": self._run_started,
            "run_ended": self._run_ended,
            "write": self._write,
            "runs": lambda m, _: {"runs": self.store.runs(_key(m))},
            "writes": lambda m, _: {"writes": self.store.writes(_key(m))},
            "lookup": self._lookup,
        }

    def connection(self) -> LineProtocol:
        conn = LineProtocol(self._on_message, self.connections.discard)
        self.connections.add(conn)
        return conn

    def _on_message(self, conn: LineProtocol, message: Message) -> None:
        request_id = message.get("id")
        try:
            op = message.get("op")
            handler = self._ops.get(op) if isinstance(op, str) else None
            if handler is None:
                raise SpecError(f"unknown op {op!r} (known: {', '.join(self._ops)})")
            result = handler(message, time.monotonic())
        except SpecError as error:
            if request_id is not None:
                conn.send({"type": "reply", "id": request_id, "ok": False, "error": str(error)})
            return
        if not self._commit_soon:
            self._commit_soon = True
            self.loop.call_soon(self._commit)
        if request_id is not None:
            conn.send({"type": "reply", "id": request_id, "ok": True, "result": result or {}})

    def _commit(self) -> None:
        self._commit_soon = False
        self.store.commit()

    def _run_started(self, m: Message, at: float) -> None:
        self.store.run_started(codec.text(m, "worker"), codec.text(m, "attempt"),
                               codec.text(m, "key"), codec.text(m, "tool"), at)

    def _run_ended(self, m: Message, at: float) -> None:
        end = codec.text(m, "end")
        if end not in RUN_ENDS:
            raise SpecError(f"run end {end!r} is not one of {', '.join(RUN_ENDS)}")
        self.store.run_ended(codec.text(m, "worker"), codec.text(m, "attempt"), end,
                             codec.text(m, "output"), at)

    def _write(self, m: Message, at: float) -> dict[str, Any]:
        deadline = m.get("deadline")
        if deadline is not None and (isinstance(deadline, bool)
                                     or not isinstance(deadline, int | float)):
            raise SpecError(f"deadline must be a number or null, got {deadline!r}")
        return self.store.write(codec.text(m, "worker"), codec.text(m, "attempt"),
                                codec.text(m, "key"), codec.text(m, "tool"),
                                codec.text(m, "payload"), at, deadline)

    def _lookup(self, m: Message, _: float) -> dict[str, Any]:
        key = codec.text(m, "key")
        writes = self.store.writes(key)
        return {"key": key, "applied": sum(1 for w in writes if w["applied"]),
                "writes": writes, "runs": self.store.runs(key)}


def _key(message: Message) -> str | None:
    key = message.get("key")
    if key is not None and not isinstance(key, str):
        raise SpecError(f"field 'key' must be a string, got {key!r}")
    return key


def services_with(keyed: list[str], plain: list[str]) -> dict[str, Service]:
    table = dict(SERVICES)
    for name in keyed:
        table[name] = Service.KEYED
    for name in plain:
        table[name] = Service.PLAIN
    return table


async def serve_ledger(db: Path, host: str, port: int, services: Mapping[str, Service],
                       stop: asyncio.Event, announce: Callable[[str], None] | None = None
                       ) -> int:
    """Serve the ledger until `stop` is set; 0 on a clean stop."""
    store = LedgerStore(db, services)
    service = LedgerService(store)
    try:
        listener, bound_host, bound_port = await listen(service.connection, host, port)
    except SpecError:
        store.close()
        raise
    log.info("ledger %s listening on %s:%s", db, bound_host, bound_port)
    if announce is not None:
        announce(ready_line("ledger", host=bound_host, port=bound_port, db=str(db),
                            pid=os.getpid()))
    try:
        await stop.wait()
    finally:
        listener.close()
        for conn in list(service.connections):
            conn.close()
        await listener.wait_closed()
        store.close()
    return 0
