"""The checks every SQLite file of the runtime gets before a process writes to it: is it an SQLite
database at all, does it pass SQLite's own integrity check, and is it free of another process
that writes it. Each read leaves the file byte for byte as it was; each problem is a one-line
SpecError naming the file (`what`: "journal", "ledger")."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

from atmostonce.spec.errors import SpecError

SQLITE_MAGIC = b"SQLite format 3\x00"


def problem(what: str, path: Path, text: str) -> SpecError:
    return SpecError(f"{what} {path}: {text}")


def open_read_only(what: str, path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite file at `path`, after its header and SQLite's
    quick_check have passed (no side file is made unless a write-ahead log is already there)."""
    if not path.is_file():
        raise problem(what, path, "not a regular file")
    with path.open("rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    if not head:
        raise problem(what, path, f"the file is empty, so it is not an atmostonce {what}")
    if head != SQLITE_MAGIC:
        raise problem(what, path, f"not an SQLite database, so not an atmostonce {what}")
    uri = f"{path.resolve().as_uri()}?mode=ro"
    if not path.with_name(path.name + "-wal").exists():
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as error:
        raise problem(what, path, f"cannot open it read-only: {error}") from None
    try:
        check = conn.execute("PRAGMA quick_check").fetchone()
    except sqlite3.Error as error:
        conn.close()
        raise problem(what, path, f"the SQLite file is damaged: {error}") from None
    if check is None or check[0] != "ok":
        conn.close()
        raise problem(what, path,
                      f"the SQLite file is damaged: {check[0] if check else 'no answer'}")
    return conn


def lock(what: str, path: Path, holder: str) -> int:
    """An exclusive lock on `path`, held by the one process that writes it and released by the
    kernel when that process dies; the descriptor that holds it. `holder` names who else may
    hold it, for the error."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise problem(what, path, f"it is in use by another {holder}") from None
    return fd
