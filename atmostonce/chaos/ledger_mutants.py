"""A broken effect ledger, the positive control of the `disk` nemesis's ledger target
(`atmostonce chaos --ledger-variant late-starts`).

It runs the real `atmostonce ledger` with one change to its file's rules: a run's start is
answered at once but written to the file only later, with the first commit at least
`LATE` seconds after it (or with the run's end, whichever comes first), while a write is
committed before it is answered, as always. A tool starts on that answer and writes, so a
ledger that stops in between holds the write and has lost the start that allowed it. Nothing
but the ledger's own death shows it: a ledger that keeps running writes every start it
answered, a little late.

    python -m atmostonce.chaos.ledger_mutants late-starts ledger --db ...
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from atmostonce.check.history.services import Service
from atmostonce.runtime.ledger_store import LedgerStore

LATE = 1.0
"""Seconds a run's start waits, answered, before it is written to the file."""


class LateStarts(LedgerStore):
    """Answers a run's start before it is on disk (see the module docstring)."""

    def __init__(self, path: Path, services: Mapping[str, Service]) -> None:
        super().__init__(path, services)
        self.late: dict[tuple[str, str], tuple[str, str, float]] = {}
        """(worker, attempt) -> (key, tool, started) of each start answered but not written."""

    def run_started(self, worker: str, attempt: str, key: str, tool: str, at: float) -> None:
        if (worker, attempt) not in self.started:
            self.started.add((worker, attempt))
            self.late[(worker, attempt)] = (key, tool, at)

    def run_ended(self, worker: str, attempt: str, end: str, output: str, at: float) -> None:
        self._write_start(worker, attempt)
        super().run_ended(worker, attempt, end, output, at)

    def commit(self) -> None:
        due = time.monotonic() - LATE
        for worker, attempt in [run for run, (_, _, at) in self.late.items() if at <= due]:
            self._write_start(worker, attempt)
        super().commit()

    def _write_start(self, worker: str, attempt: str) -> None:
        late = self.late.pop((worker, attempt), None)
        if late is not None:
            super().run_started(worker, attempt, *late)


VARIANTS: dict[str, type[LedgerStore]] = {"late-starts": LateStarts}


def _install(variant: type[LedgerStore]) -> None:
    from atmostonce.runtime import ledger

    ledger.LedgerStore = variant  # type: ignore[attr-defined]


def run(argv: list[str]) -> int:
    """`VARIANT ROLE ARGS...`: the runtime's command with the variant's ledger file rules."""
    from atmostonce.runtime.__main__ import variant_main

    return variant_main(argv, {name: partial(_install, variant)
                               for name, variant in VARIANTS.items()})


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
