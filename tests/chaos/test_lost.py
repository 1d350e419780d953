"""The lost-acknowledgement check beyond the session API: a ledger write whose run start is not
on record is an acknowledged run start the ledger lost, named with its call's history excerpt;
and `--nemesis disk` asks for libfiu or an engine that can fail its disk, in one line."""

from __future__ import annotations

import os
import sqlite3

from atmostonce.chaos.lost import lost_records
from atmostonce.chaos.observations import Observations
from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import ServerLog
from atmostonce.runtime.disk_faults import disk_fault
from atmostonce.runtime.ledger_client import LedgerRun, Write
from tests.chaos.conftest import chaos

KEY = "s1/t1/c1"


def write(worker: str, attempt: str) -> Write:
    return Write(key=KEY, tool="cancel_order", worker=worker, attempt=attempt, at=2.0,
                 applied=True, fenced=False, payload="{}")


def run(worker: str, attempt: str) -> LedgerRun:
    return LedgerRun(worker=worker, attempt=attempt, key=KEY, tool="cancel_order", started=1.0,
                     ended=None, end=None, output=None)


def test_a_write_whose_run_start_the_ledger_lost_is_a_lost_acknowledgement() -> None:
    history: list[h.Entry] = [h.ServerRestarted(0.5, journal_entries=3)]
    lost = lost_records(Observations(), ServerLog(), [write("w1", f"{KEY}#1")],
                        [run("w1", f"{KEY}#2")], history)
    assert [(item.kind, item.key, item.now) for item in lost] == [
        ("run_start", KEY, "no run start on record")]
    assert lost_records(Observations(), ServerLog(), [write("w1", f"{KEY}#1")],
                        [run("w1", f"{KEY}#1")], history) == []


def test_only_io_and_full_disk_errors_are_disk_faults() -> None:
    io = sqlite3.OperationalError("disk I/O error")
    io.sqlite_errorcode = 1034
    io.sqlite_errorname = "SQLITE_IOERR_FSYNC"
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorcode = 13
    full.sqlite_errorname = "SQLITE_FULL"
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = 5
    assert disk_fault(io) == "SQLITE_IOERR_FSYNC"
    assert disk_fault(full) == "SQLITE_FULL"
    assert disk_fault(busy) is None
    assert disk_fault(OSError(28, "No space left on device")) == "ENOSPC"
    assert disk_fault(OSError(2, "No such file")) is None
    assert disk_fault(RuntimeError("no")) is None


def test_disk_faults_without_libfiu_are_refused_in_one_line() -> None:
    done = chaos("--duration", "1", "--nemesis", "disk", timeout=60.0,
                 env={"PATH": os.devnull})
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("atmostonce: error")]
    assert errors == ["atmostonce: error: fiu-run and fiu-ctrl not found: disk faults need "
                      "libfiu's tools (Debian package fiu-utils)"], done.stderr[-2000:]
    assert "Traceback" not in done.stderr
