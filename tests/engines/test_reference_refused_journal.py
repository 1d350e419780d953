"""A journal the reference engine's next server refuses stays as it was: the refusal reaches
the harness as one line, and a start that changed the file it refused says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.reference.adapter import ReferenceEngine
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig

GARBAGE = b"this is not a journal\n" * 64
SCRIBBLE = ("import sys; from pathlib import Path; "
            "journal = Path(sys.argv[sys.argv.index('--journal') + 1]); "
            "journal.write_bytes(b''); sys.exit(2)")


def engine(tmp_path: Path) -> ReferenceEngine:
    return ReferenceEngine(EngineSetup(tmp_path, "127.0.0.1:1", ExecutorConfig(), 0,
                                       DEFAULT_EXECUTOR))


def test_a_journal_refused_as_damaged_is_left_untouched(tmp_path: Path) -> None:
    built = engine(tmp_path)
    built.journal.write_bytes(GARBAGE)
    try:
        with pytest.raises(SpecError, match="not an SQLite database") as refused:
            built.start_server()
    finally:
        built.close()
    assert "was changed" not in str(refused.value)
    assert built.journal.read_bytes() == GARBAGE


def test_a_start_that_changes_the_journal_it_refuses_is_named(tmp_path: Path) -> None:
    built = engine(tmp_path)
    built.journal.write_bytes(GARBAGE)
    built.server_command = (sys.executable, "-c", SCRIBBLE)
    try:
        with pytest.raises(SpecError, match="the journal it refused was changed"):
            built.start_server()
    finally:
        built.close()
