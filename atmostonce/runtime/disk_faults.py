"""What the runtime does when its disk fails under the journal or the ledger.

An error writing or syncing either file is fatal, never retried: after a failed fsync the
kernel may already have dropped the pages it could not write, so a retry that succeeds proves
nothing. The process answers nothing of what it was committing (a client sees a lost
connection, never an acknowledgement of something that may not be on disk), logs one line
naming the file and the fault, and ends at once with `DISK_FAULT_EXIT` (`stop_now`), without
closing the file: a clean close would checkpoint the write-ahead log into the database, the
very writing that just failed. The next start recovers from the file as after a crash, and
whoever supervises the process can tell a disk fault from a crash by its status.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import sys

from atmostonce.runtime.wire import flush_all

DISK_FAULT_EXIT = 4
"""The exit status of a server or ledger that stopped because its file could not be written."""

_SQLITE_IOERR = 10
_SQLITE_FULL = 13
_DISK_ERRNOS = frozenset({errno.EIO, errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def disk_fault(error: BaseException) -> str | None:
    """The name of the disk fault `error` reports (such as SQLITE_IOERR_FSYNC, SQLITE_FULL or
    ENOSPC), or None when it is not one."""
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in (_SQLITE_IOERR, _SQLITE_FULL):
            return str(getattr(error, "sqlite_errorname", "") or f"SQLite error {code}")
        return None
    if isinstance(error, OSError) and error.errno in _DISK_ERRNOS:
        return errno.errorcode.get(error.errno, str(error.errno))
    return None


def fault_line(what: str, path: object, error: BaseException, fault: str) -> str:
    """The one line a process logs before it exits on a disk fault."""
    return (f"stopping on a disk fault: the {what} {path} could not be written ({fault}: "
            f"{error}); nothing it was committing is answered; exit {DISK_FAULT_EXIT}, to be "
            "started again from the disk")


def stop_now(log: logging.Logger, line: str) -> None:
    """Log `line`, flush what the process printed, and end it with `DISK_FAULT_EXIT`."""
    log.error("%s", line)
    for handler in logging.getLogger().handlers:
        handler.flush()
    flush_all()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(DISK_FAULT_EXIT)

