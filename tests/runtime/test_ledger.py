"""The effect ledger's store: keyed services drop a repeated key and plain ones apply every
write, a write after the worker's lease deadline is refused, runs keep their start and end, and
a file that is not a ledger is refused untouched."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from atmostonce.check.services import Service
from atmostonce.executor.runtime.ledger import LedgerStore, services_with
from atmostonce.spec.errors import SpecError


def store(tmp_path: Path) -> LedgerStore:
    return LedgerStore(tmp_path / "ledger.db", services_with(keyed=["keyed_tool"], plain=[]))


@pytest.mark.clause("TC-EFF-IDEM", "TC-KEY-3", "TC-EFF-NONIDEM")
def test_a_keyed_service_drops_a_repeat_and_a_plain_one_applies_it(tmp_path: Path) -> None:
    ledger = store(tmp_path)
    writes = [ledger.write("w", f"{key}#{n}", key, tool, "{}", 1.0, None)
              for tool, key in (("keyed_tool", "s/t/1"), ("cancel_order", "s/t/2"))
              for n in (1, 2)]
    assert [w["applied"] for w in writes] == [True, False, True, True]
    assert [w["count"] for w in writes] == [1, 1, 1, 2]
    ledger.close()
    again = store(tmp_path)
    assert again.write("w", "s/t/1#3", "s/t/1", "keyed_tool", "{}", 2.0, None)["applied"] is False
    assert len(again.writes("s/t/1")) == 3
    again.close()


@pytest.mark.clause("D-12")
def test_a_write_after_the_lease_deadline_is_refused(tmp_path: Path) -> None:
    ledger = store(tmp_path)
    late = ledger.write("w", "s/t/1#1", "s/t/1", "cancel_order", "{}", at=5.0, deadline=4.0)
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
