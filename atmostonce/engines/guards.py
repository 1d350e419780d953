"""The guard (`atmostonce.guard`) as a guarded engine variant's processes share it: one journal
file in the run's directory, the run's attempts, backoff and approval deadline, and the
monotonic clock every process of the machine shares; and what its journal tells the server log:
each attempt's intent is its hand-out, each result it kept is delivered. Attempts are labelled
`{key}#{worker}.{n}`."""

from __future__ import annotations

import time
from pathlib import Path

from atmostonce.check.history import entries as h
from atmostonce.guard import Guard, GuardSettings
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import Record

JOURNAL = "guard.db"
"""The guard's journal's file name in the engine's directory."""


def journal_guard(path: Path, config: ExecutorConfig) -> Guard:
    """The guard over the journal at `path`, with the run's attempts, backoff and deadline."""
    return Guard(path, GuardSettings(config.max_attempts, config.retry_backoff,
                                     config.approval_deadline), clock=time.monotonic)


def worker_of(label: str) -> str:
    """The process an attempt label `{key}#{worker}.{n}` names."""
    return label.rpartition("#")[2].rpartition(".")[0]


def hand_outs(guard: Guard) -> list[h.Entry]:
    """Every attempt's intent in the journal, as the hand-out it is: durable before the tool
    started (D-5)."""
    with guard.journal.reading() as tx:
        tools = {c.key: c.tool for c in tx.calls()}
        attempts = tx.attempts()
    return [h.HandedOut(a.started, worker_of(a.label), a.label, a.key, tools.get(a.key, ""),
                        True, a.key) for a in attempts]


def results_delivered(guard: Guard) -> list[h.Entry]:
    """Each result a tool gave, delivered when the journal kept it: from then on the guard
    gives it back, whatever happens to the process before the engine keeps it."""
    with guard.journal.reading() as tx:
        kept = tx.tool_results()
    return [h.ResultDelivered(at, worker_of(r.attempt), r.attempt,
                              r.outcome.record is Record.SUCCEEDED)
            for r, at in kept if r.attempt is not None]
