"""The effect ledger's store: keyed services drop a repeated key and plain ones apply every
write, a write after the worker's lease deadline is refused, a write whose run start is not on
record is refused, runs keep their start and end; a file that is not a ledger, or a damaged
one, is refused untouched, a second ledger cannot open a file in use, and a ledger process that
cannot take its port creates no file."""

from __future__ import annotations

import hashlib
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from atmostonce.check.history.services import Service
from atmostonce.runtime.ledger import services_with
from atmostonce.runtime.ledger_store import LedgerStore
from atmostonce.spec.errors import SpecError
from tests.load import patience


def store(tmp_path: Path) -> LedgerStore:
    return LedgerStore(tmp_path / "ledger.db", services_with(keyed=["keyed_tool"], plain=[]))


def write(ledger: LedgerStore, attempt: str, key: str, tool: str, at: float = 1.0,
          deadline: float | None = None) -> dict[str, Any]:
    """A run's start and then its write, as a worker sends them."""
    ledger.run_started("w", attempt, key, tool, at)
    return ledger.write("w", attempt, key, tool, "{}", at, deadline)


@pytest.mark.clause("TC-EFF-IDEM", "TC-KEY-3", "TC-EFF-NONIDEM")
def test_a_keyed_service_drops_a_repeat_and_a_plain_one_applies_it(tmp_path: Path) -> None:
    ledger = store(tmp_path)
    writes = [write(ledger, f"{key}#{n}", key, tool)
              for tool, key in (("keyed_tool", "s/t/1"), ("cancel_order", "s/t/2"))
              for n in (1, 2)]
    assert [w["applied"] for w in writes] == [True, False, True, True]
    assert [w["count"] for w in writes] == [1, 1, 1, 2]
    ledger.close()
    again = store(tmp_path)
    assert write(again, "s/t/1#3", "s/t/1", "keyed_tool", 2.0)["applied"] is False
    assert len(again.writes("s/t/1")) == 3
    again.close()


@pytest.mark.clause("D-12")
def test_a_write_after_the_lease_deadline_is_refused(tmp_path: Path) -> None:
    ledger = store(tmp_path)
    late = write(ledger, "s/t/1#1", "s/t/1", "cancel_order", at=5.0, deadline=4.0)
    assert (late["applied"], late["fenced"]) == (False, True)
    assert ledger.writes("s/t/1")[0]["fenced"] is True
    ledger.close()


@pytest.mark.clause("TC-REC-NOTRUN", "TC-RCN-ASK")
def test_runs_keep_their_worker_key_start_and_end(tmp_path: Path) -> None:
    ledger = store(tmp_path)
    ledger.run_started("w-1", "s/t/1#1", "s/t/1", "lookup_order", 1.0)
    ledger.run_started("w-2", "s/t/2#1", "s/t/2", "cancel_order", 1.5)
    ledger.run_ended("w-1", "s/t/1#1", "returned", "ok", 2.0)
    runs = ledger.runs()
    assert [(r["worker"], r["end"], r["ended"]) for r in runs] == [
        ("w-1", "returned", 2.0), ("w-2", None, None)]
    assert [r["key"] for r in ledger.runs("s/t/2")] == ["s/t/2"]
    assert services_with([], ["refund"])["refund"] is Service.PLAIN
    ledger.close()


def test_a_file_that_is_not_a_ledger_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("shopping list\n")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(SpecError, match=r"ledger .*notes\.db"):
        LedgerStore(path, {})
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_a_write_whose_run_start_is_not_on_record_is_refused_and_leaves_nothing(
        tmp_path: Path) -> None:
    ledger = store(tmp_path)
    ledger.run_started("w", "s/t/1#1", "s/t/1", "cancel_order", 1.0)
    with pytest.raises(SpecError, match="whose run start is not on record"):
        ledger.write("w", "s/t/2#1", "s/t/2", "cancel_order", "{}", 1.0, None)
    with pytest.raises(SpecError, match="whose run start is not on record"):
        ledger.write("w-other", "s/t/1#1", "s/t/1", "cancel_order", "{}", 1.0, None)
    assert ledger.writes() == []
    ledger.close()
    again = store(tmp_path)
    assert again.write("w", "s/t/1#1", "s/t/1", "cancel_order", "{}", 2.0, None)["applied"]
    again.close()


def test_a_damaged_ledger_is_refused_untouched(tmp_path: Path) -> None:
    ledger = store(tmp_path)
    for n in range(300):
        write(ledger, f"s/t/{n}#1", f"s/t/{n}", "cancel_order")
    ledger.close()
    path = tmp_path / "ledger.db"
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page + 100:3 * page] = bytes(page - 100)
    path.write_bytes(bytes(data))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(SpecError, match=r"ledger .*ledger\.db: .*damaged"):
        store(tmp_path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_a_second_ledger_on_a_file_in_use_is_refused(tmp_path: Path) -> None:
    first = store(tmp_path)
    with pytest.raises(SpecError, match="in use by another ledger"):
        store(tmp_path)
    first.close()
    store(tmp_path).close()


@pytest.mark.parametrize(("host", "says"), [
    ("127.0.0.1", "cannot listen on 127.0.0.1:{port}"),
    ("no-such-host.invalid", "cannot listen on no-such-host.invalid:{port}"),
])
def test_a_ledger_that_cannot_take_its_port_creates_no_file(
        tmp_path: Path, host: str, says: str) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    try:
        db = tmp_path / "ledger.db"
        done = subprocess.run([sys.executable, "-m", "atmostonce", "ledger", "--db", str(db),
                               "--host", host, "--port", str(port)],
                              capture_output=True, text=True, timeout=60 * patience(), check=False)
    finally:
        taken.close()
    assert done.returncode == 2, done.stderr
    assert says.format(port=port) in done.stderr
    assert done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_new_ledger_file_is_whole_with_its_header(tmp_path: Path) -> None:
    store(tmp_path).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.db"]
    conn = sqlite3.connect(tmp_path / "ledger.db")
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    conn.close()
    assert meta == {"application": "atmostonce-ledger", "format": "1"}
