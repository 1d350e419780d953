"""A server or ledger whose disk fails while it commits answers nothing of what it was
committing and exits with the disk-fault status, and the next start finds exactly what was
durable before: real processes under libfiu's `fiu-run -x`, the fault turned on by `fiu-ctrl`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from atmostonce.runtime import fiu
from atmostonce.runtime.client import Client
from atmostonce.runtime.disk_faults import DISK_FAULT_EXIT
from atmostonce.runtime.fiu import DiskFault
from atmostonce.runtime.journal import read_journal
from atmostonce.runtime.ledger_client import AsyncLedger, LedgerClient
from atmostonce.runtime.loop import LoopThread
from atmostonce.runtime.processes import MODULE, Managed, spawn, start
from atmostonce.runtime.tokens import ensure_token, read_token
from atmostonce.spec.errors import SpecError

LIMIT = 20.0

pytestmark = pytest.mark.skipif(fiu.missing() is not None, reason=str(fiu.missing()))


def under_fiu(tmp_path: Path, role: str, args: list[str], stopped: list[Managed]) -> Managed:
    process = start(role, fiu.under_fiu([sys.executable, "-m", MODULE, role, *args],
                                        tmp_path / "fiu"), tmp_path / f"{role}.log")
    stopped.append(process)
    process.wait_ready(LIMIT)
    return process


def client_of(server: Managed) -> Client:
    token = read_token(Path(server.info["token_file"]))
    return Client("127.0.0.1", int(server.info["port"]), token=token)


@pytest.mark.parametrize("fault", list(DiskFault))
def test_a_journal_that_cannot_be_written_stops_the_server_without_an_answer(
        tmp_path: Path, stopped: list[Managed], fault: DiskFault) -> None:
    journal = tmp_path / "journal.db"
    server = under_fiu(tmp_path, "serve", ["--journal", str(journal), "--port", "0"], stopped)
    with client_of(server) as client:
        client.open_session("s")
        before = read_journal(journal)
        fiu.inject(server.pid, tmp_path / "fiu", fault)
        with pytest.raises(SpecError):
            client.ask("s", "t1", "c1", "lookup_order")
    assert server.wait(LIMIT) == DISK_FAULT_EXIT
    lines = [line for line in server.output().splitlines() if "disk fault" in line]
    assert len(lines) == 1, server.output()
    assert str(journal) in lines[0]
    assert "Traceback" not in server.output()
    again = spawn("serve", ["--journal", str(journal), "--port", "0"], tmp_path / "again.log")
    stopped.append(again)
    again.wait_ready(LIMIT)
    assert read_journal(journal)[:len(before)] == before
    with client_of(again) as client:
        assert client.ask("s", "t1", "c1", "lookup_order") == "s/t1/c1"


@pytest.mark.parametrize("fault", [DiskFault.WRITE_EIO, DiskFault.WRITE_ENOSPC])
def test_a_ledger_that_cannot_be_written_stops_without_acknowledging_a_run_start(
        tmp_path: Path, stopped: list[Managed], fault: DiskFault) -> None:
    db, token_file = tmp_path / "ledger.db", tmp_path / "token"
    token = ensure_token(token_file)
    ledger = under_fiu(tmp_path, "ledger", ["--db", str(db), "--port", "0", "--token-file",
                                            str(token_file)], stopped)
    port = int(ledger.info["port"])
    fiu.inject(ledger.pid, tmp_path / "fiu", fault)
    io = LoopThread("disk-fault-test")
    try:
        worker = io.call(lambda: AsyncLedger("127.0.0.1", port, token=token, workers=("w1",),
                                                 incarnation="i1"))
        io.run(worker.connect(), timeout=LIMIT)
        with pytest.raises((SpecError, OSError)):
            io.run(worker.request({"op": "run_started", "worker": "w1", "attempt": "a1",
                                   "key": "s/t1/c1", "tool": "lookup_order"}), timeout=LIMIT)
        io.call(worker.close)
    finally:
        io.close()
    assert ledger.wait(LIMIT) == DISK_FAULT_EXIT
    assert sum("disk fault" in line for line in ledger.output().splitlines()) == 1
    again = spawn("ledger", ["--db", str(db), "--port", "0", "--token-file", str(token_file)],
                  tmp_path / "again.log")
    stopped.append(again)
    again.wait_ready(LIMIT)
    with LedgerClient("127.0.0.1", int(again.info["port"]), token=token) as reader:
        assert reader.runs() == []
