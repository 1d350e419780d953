"""The journal file: a fresh one is created whole with its header; entries come back in order
after a reopen and after the writer was killed; a corrupt or foreign file is refused with one
line naming it and the problem, and left byte for byte as it was (D-8)."""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from atmostonce.executor import reference
from atmostonce.runtime.journal import (
    APPLICATION,
    APPLICATION_ID,
    FORMAT,
    Entry,
    create_journal,
    open_journal,
    read_journal,
)
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig
from tests.load import patience

SESSION = {"type": "session", "at": 1.0, "session_id": "s", "default_effect": None}


def recover(entries: list[Entry]) -> int:
    reference(ExecutorConfig()).recover(entries, 100.0)
    return len(entries)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def journal_with(path: Path, rows: list[str]) -> Path:
    create_journal(path)
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO entries (entry) VALUES (?)", [(r,) for r in rows])
    conn.commit()
    conn.close()
    return path


@pytest.mark.clause("D-8")
def test_a_missing_journal_is_created_with_its_header(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal, count = open_journal(path, recover)
    journal.close()
    assert count == 0
    conn = sqlite3.connect(path)
    assert dict(conn.execute("SELECT key, value FROM meta")) == {
        "application": APPLICATION, "format": str(FORMAT)}
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")] == []


@pytest.mark.clause("D-8", "D-5")
def test_appended_batches_come_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal, _ = open_journal(path, recover)
    journal.append([json.dumps(SESSION)])
    journal.append([json.dumps({**SESSION, "at": float(i)}) for i in range(2, 5)])
    assert read_journal(path) == [SESSION] + [{**SESSION, "at": float(i)} for i in range(2, 5)]
    journal.close()
    again, count = open_journal(path, recover)
    assert (again.entries, count) == (4, 4)
    again.close()


WRITER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from atmostonce.runtime.journal import JournalFile, create_journal
    path = Path(sys.argv[1])
    create_journal(path)
    journal = JournalFile(path, 0)
    entry = {"type": "session", "at": 1.0, "session_id": "s", "default_effect": None}
    journal.append([json.dumps(entry)] * 7)
    print("committed", flush=True)
    while True:
        journal.append([json.dumps(entry)] * 7)
""")


@pytest.mark.clause("D-8")
def test_a_journal_whose_writer_was_killed_mid_commit_opens_whole(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "committed"
        time.sleep(0.3)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    entries = read_journal(path)
    assert entries
    assert len(entries) % 7 == 0
    journal, count = open_journal(path, recover)
    journal.close()
    assert count == len(entries)


def _text(path: Path) -> Path:
    path.write_text("this is not a journal\n")
    return path


def _empty(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _foreign(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    conn.execute("INSERT INTO orders (item) VALUES ('book')")
    conn.commit()
    conn.close()
    return path


def _meta(key: str, value: str) -> Callable[[Path], Path]:
    def make(path: Path) -> Path:
        create_journal(path)
        conn = sqlite3.connect(path)
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
        conn.commit()
        conn.close()
        return path
    return make


def _damaged(path: Path) -> Path:
    journal_with(path, [json.dumps({**SESSION, "at": float(i)}) for i in range(400)])
    data = bytearray(path.read_bytes())
    page = 4096
    data[page:3 * page] = b"\xff" * (2 * page)
    path.write_bytes(bytes(data))
    return path


def _gap(path: Path) -> Path:
    journal_with(path, [json.dumps(SESSION)] * 3)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM entries WHERE seq = 2")
    conn.commit()
    conn.close()
    return path


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "text file": (_text, "not an SQLite database"),
    "empty file": (_empty, "empty"),
    "foreign SQLite database": (_foreign, "not an atmostonce journal"),
    "another application": (_meta("application", "someone-else"), "someone-else"),
    "another format": (_meta("format", "99"), "format '99'"),
    "entry not JSON": (lambda p: journal_with(p, [json.dumps(SESSION), "{not json"]),
                       "entry 2 is not a JSON object"),
    "entry not an object": (lambda p: journal_with(p, ["[1, 2]"]), "entry 1 is not a JSON"),
    "entry recover rejects": (lambda p: journal_with(p, ['{"type": "bogus", "at": 1}']),
                              "cannot recover"),
    "entry about an unknown call": (
        lambda p: journal_with(p, [json.dumps(SESSION), json.dumps(
            {"type": "record", "at": 2.0, "key": "s/t/c", "record": "succeeded",
             "error": "", "failure": None, "output": ""})]), "no call with key"),
    "missing entry": (_gap, "entry 2 is missing"),
    "damaged pages": (_damaged, "damaged"),
}


@pytest.mark.clause("D-8")
@pytest.mark.parametrize("case", list(CASES))
def test_a_corrupt_or_foreign_file_is_refused_and_left_untouched(tmp_path: Path,
                                                                 case: str) -> None:
    make, problem = CASES[case]
    path = make(tmp_path / "journal.db")
    before = digest(path)
    siblings = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SpecError) as caught:
        open_journal(path, recover)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message
    assert problem in message
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings


@pytest.mark.clause("D-8")
def test_serve_refuses_a_foreign_journal_with_exit_2_and_one_line(tmp_path: Path) -> None:
    path = _foreign(tmp_path / "orders.db")
    before = digest(path)
    done = subprocess.run([sys.executable, "-m", "atmostonce.runtime", "serve",
                           "--journal", str(path), "--port", "0"],
                          capture_output=True, text=True, timeout=30 * patience(), check=False)
    assert done.returncode == 2
    assert done.stderr.startswith("atmostonce: error: journal ")
    assert done.stderr.count("\n") == 1
    assert str(path) in done.stderr
    assert digest(path) == before


def test_a_journal_file_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not a regular file"):
        read_journal(tmp_path)


@pytest.mark.clause("D-8")
def test_a_journal_in_use_by_another_server_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    first, _ = open_journal(path, recover)
    try:
        with pytest.raises(SpecError, match="in use by another server"):
            open_journal(path, recover)
    finally:
        first.close()
    again, _ = open_journal(path, recover)
    again.close()
