"""The effect ledger service: its own process and SQLite file, the ground truth of what ran.

Tools write their effects here with the call's idempotency key, the tool, the worker and the
attempt. Per tool the ledger plays the service that tool writes to: a keyed service drops a
write whose key it already applied (TC-EFF-IDEM, TC-KEY-3), a plain one applies every write,
so a repeat repeats the effect (TC-EFF-NONIDEM). Workers also log when each run starts and how
it ends, so checkers and reconcile can ask which runs really happened, when, at which worker,
with which key (TC-REC-NOTRUN, TC-RCN-ASK). A write carries the worker's lease deadline on the
shared monotonic clock and is refused once it has passed, so a worker cut off from the server
cannot take effect after its lease (D-12). This module serves the ledger; `ledger_store` holds
its file and the services' rules.

Wire format: newline-delimited JSON. A connection opens with
`{"type": "hello", "wire", "role": "worker" | "reader", "token", "workers": [NAME, ...],
"incarnation"}` (a worker lists the names it speaks for, with its process's incarnation, and may
log runs and write only for them; a name spoken for by another incarnation is refused; a reader
only queries) and gets `{"type": "welcome", "service": "atmostonce-ledger"}`, or an error and a
closed connection. Then requests with an `id` get `{"type": "reply", "id", "ok", "result" |
"error"}`, each once what it changed is committed::

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
import math
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from atmostonce.check.history.services import Service
from atmostonce.runtime import codec
from atmostonce.runtime.disk_faults import disk_fault, fault_line, stop_now
from atmostonce.runtime.ledger_store import LedgerStore
from atmostonce.runtime.tokens import check_token, ensure_token, matches
from atmostonce.runtime.tools import SERVICES
from atmostonce.runtime.wire import (
    LEDGER,
    WIRE_VERSION,
    LineProtocol,
    Message,
    bind,
    listen,
    peer,
    ready_line,
    refusal,
    welcome,
)
from atmostonce.spec.errors import SpecError

log = logging.getLogger("atmostonce.ledger")

RUN_ENDS = ("returned", "tool_failed", "stopped")


class LedgerService:
    """Serves the ledger's wire protocol; commits after each burst of messages. A connection
    opens with a hello carrying the ledger's token; one without it is refused, logged, and
    changes nothing."""

    def __init__(self, store: LedgerStore, token: str,
                 on_fatal: Callable[[str], None]) -> None:
        self.store = store
        self.token = token
        self.on_fatal = on_fatal
        self.failure: str | None = None
        self._replies: list[tuple[LineProtocol, Message]] = []
        self.loop = asyncio.get_running_loop()
        self._commit_soon = False
        self.connections: set[LineProtocol] = set()
        self.welcomed: dict[LineProtocol, frozenset[str]] = {}
        """Each welcomed connection and the worker names it may speak for (none: a reader)."""
        self.incarnations: dict[str, str] = {}
        """Each worker name spoken for, and the incarnation of the process that spoke first."""
        self._ops: dict[str, Callable[[Message, float, frozenset[str]], dict[str, Any] | None]]
        self._ops = {
            "run_started": self._run_started,
            "run_ended": self._run_ended,
            "write": self._write,
            "runs": lambda m, _, __: {"runs": self.store.runs(_key(m))},
            "writes": lambda m, _, __: {"writes": self.store.writes(_key(m))},
            "lookup": self._lookup,
        }

    def connection(self) -> LineProtocol:
        conn = LineProtocol(self._on_message, self._on_close)
        self.connections.add(conn)
        return conn

    def _on_close(self, conn: LineProtocol) -> None:
        self.connections.discard(conn)
        self.welcomed.pop(conn, None)

    def _on_hello(self, conn: LineProtocol, message: Message) -> None:
        if message.get("type") != "hello" or message.get("wire") != WIRE_VERSION:
            reason = f"expected a hello speaking {WIRE_VERSION}, got {str(message)[:200]}"
        elif message.get("role") not in ("worker", "reader"):
            reason = f"hello role must be 'worker' or 'reader', got {message.get('role')!r:.100}"
        elif not matches(message.get("token"), self.token):
            reason = "a hello without the right token"
        elif message.get("role") == "worker" and not _names(message.get("workers")):
            reason = "a worker hello must list the worker names it speaks for ('workers')"
        elif message.get("role") == "worker" and (taken := self._taken(message)):
            reason = f"worker name {taken[:100]!r} belongs to another worker process"
        else:
            names = _names(message.get("workers")) if message.get("role") == "worker" else ()
            for name in names:
                self.incarnations.setdefault(name, str(message.get("incarnation")))
            self.welcomed[conn] = frozenset(names)
            conn.send(welcome(LEDGER))
            return
        log.warning("refused a connection from %s: %s", peer(conn), reason)
        conn.part(refusal(LEDGER, f"refused: {reason}"), reason)

    def _taken(self, message: Message) -> str | None:
        """A name the hello lists that another incarnation has spoken for, if any."""
        incarnation = message.get("incarnation")
        for name in _names(message.get("workers")):
            known = self.incarnations.get(name)
            if known is not None and not matches(incarnation, known):
                return name
        if not isinstance(incarnation, str) or not incarnation:
            return _names(message.get("workers"))[0]
        return None

    def _on_message(self, conn: LineProtocol, message: Message) -> None:
        """Handle one request; its reply waits, with every other reply of the burst and in
        order, until what the burst changed is committed, so nobody is told of an effect the
        ledger could still lose. A run's start too waits for its commit: the tool starts on
        that answer, so a ledger that dies before the commit loses no run that went ahead."""
        if self.failure is not None:
            return
        if conn not in self.welcomed:
            self._on_hello(conn, message)
            return
        request_id = message.get("id")
        reply: Message
        try:
            op = message.get("op")
            handler = self._ops.get(op) if isinstance(op, str) else None
            if handler is None:
                raise SpecError(f"unknown op {str(op)[:100]!r} (known: {', '.join(self._ops)})")
            result = handler(message, time.monotonic(), self.welcomed[conn])
            reply = {"type": "reply", "id": request_id, "ok": True, "result": result or {}}
        except SpecError as error:
            reply = {"type": "reply", "id": request_id, "ok": False, "error": str(error)}
        except sqlite3.Error as error:
            self._fail(error)
            return
        if request_id is not None:
            self._replies.append((conn, reply))
        if not self._commit_soon:
            self._commit_soon = True
            self.loop.call_soon(self._commit)

    def _commit(self) -> None:
        self._commit_soon = False
        try:
            self.store.commit()
        except sqlite3.Error as error:
            self._fail(error)
            return
        replies, self._replies = self._replies, []
        for conn, reply in replies:
            conn.send(reply)

    def _fail(self, error: sqlite3.Error) -> None:
        """The file cannot be written: nothing more is answered, and the ledger stops."""
        fault = disk_fault(error)
        if fault is not None:
            stop_now(log, fault_line("ledger", self.store.path, error, fault))
        self.failure = f"the ledger file cannot be written: {error}"
        self._replies.clear()
        self.on_fatal(self.failure)

    def _run_started(self, m: Message, at: float, names: frozenset[str]) -> None:
        self.store.run_started(_speaker(m, names), codec.text(m, "attempt"),
                               codec.text(m, "key"), codec.text(m, "tool"), at)

    def _run_ended(self, m: Message, at: float, names: frozenset[str]) -> None:
        end = codec.text(m, "end")
        if end not in RUN_ENDS:
            raise SpecError(f"run end {end!r:.100} is not one of {', '.join(RUN_ENDS)}")
        self.store.run_ended(_speaker(m, names), codec.text(m, "attempt"), end,
                             codec.text(m, "output"), at)

    def _write(self, m: Message, at: float, names: frozenset[str]) -> dict[str, Any]:
        deadline = m.get("deadline")
        if deadline is not None and (isinstance(deadline, bool)
                                     or not isinstance(deadline, int | float)
                                     or not math.isfinite(deadline)):
            raise SpecError(f"deadline must be a finite number or null, got {deadline!r:.100}")
        return self.store.write(_speaker(m, names), codec.text(m, "attempt"),
                                codec.text(m, "key"), codec.text(m, "tool"),
                                codec.text(m, "payload"), at, deadline)

    def _lookup(self, m: Message, _: float, __: frozenset[str]) -> dict[str, Any]:
        key = codec.text(m, "key")
        writes = self.store.writes(key)
        return {"key": key, "applied": sum(1 for w in writes if w["applied"]),
                "writes": writes, "runs": self.store.runs(key)}


def _names(value: object) -> tuple[str, ...]:
    """The worker names a hello lists, or () when it lists none or something else."""
    if not isinstance(value, list) or not value:
        return ()
    if not all(isinstance(v, str) and v and not any(c.isspace() for c in v) for v in value):
        return ()
    return tuple(value)


def _speaker(message: Message, names: frozenset[str]) -> str:
    """The message's worker, which must be one this connection said it speaks for."""
    worker = codec.text(message, "worker")
    if worker not in names:
        raise SpecError(f"this connection speaks for {', '.join(sorted(names)) or 'no worker'}, "
                        f"not for {worker[:100]!r}")
    return worker


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


def token_file(db: Path) -> Path:
    """Where a ledger on `db` keeps its token file unless told otherwise: beside it."""
    return db.with_name(db.name + ".token")


async def serve_ledger(db: Path, host: str, port: int, services: Mapping[str, Service],
                       stop: asyncio.Event, announce: Callable[[str], None] | None = None,
                       token: Path | None = None) -> int:
    """Serve the ledger until `stop` is set; 0 on a clean stop, 1 when its file could not be
    written; a disk fault under it ends the process at once (`atmostonce.runtime.disk_faults`).
    Its clients present the token in `token` (default: beside the file, made when missing).
    The port is taken before the file is opened or made, so a start that cannot have it leaves
    nothing behind."""
    token = token or token_file(db)
    sock = bind(host, port)
    try:
        check_token(token)
        store = LedgerStore(db, services)
    except BaseException:
        sock.close()
        raise
    try:
        secret = ensure_token(token)
    except BaseException:
        sock.close()
        store.close()
        raise
    failures: list[str] = []

    def fatal(problem: str) -> None:
        log.error("stopping: %s", problem)
        failures.append(problem)
        stop.set()

    service = LedgerService(store, secret, fatal)
    listener, bound_host, bound_port = await listen(service.connection, sock)
    log.info("ledger %s listening on %s:%s", db, bound_host, bound_port)
    if announce is not None:
        announce(ready_line("ledger", host=bound_host, port=bound_port, db=str(db),
                            pid=os.getpid(), token_file=str(token)))
    try:
        await stop.wait()
    finally:
        listener.close()
        for conn in list(service.connections):
            conn.close()
        await listener.wait_closed()
        if failures:
            store.abandon()
        else:
            store.close()
    return 1 if failures else 0
