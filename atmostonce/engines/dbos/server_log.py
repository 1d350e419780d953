"""The server log of a DBOS run: what the harness cannot see from outside, from the application
processes' notes (`notes`), the app's approval inbox (`store`) and DBOS's system database.

- `HandedOut` for each run of a tool, at the moment its process noted it (`started`), durable:
  DBOS hands nothing out, the process that runs the workflow runs the tool itself;
- `ResultDelivered` at the earliest `delivering` note of an attempt whose record the session's
  `records` event holds at the end: the moment the result reached the workflow's durable state;
- `RunEndSeen` for each `ended` note;
- from the inbox: `TimerStarted` for each call that waits for approval (its deadline starts at
  the ask), `ApprovalAnswered` for each answer taken, `TimerFired` when the deadline was found
  passed;
- `WorkerDeclaredLost` when a new process took over a killed process's executor id, which is
  when DBOS recovers that process's workflows.

The notes add what DBOS's tables say: each workflow's status and recovery attempts
(`workflow_status`) and the tool steps checkpointed (`operation_outputs`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import closing
from pathlib import Path

from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import ServerLog
from atmostonce.engines.appstore import ApprovalRow
from atmostonce.engines.noted_log import inbox_entries, noted


def dbos_tables(system_database: Path) -> list[str]:
    """Lines for the report from DBOS's own tables: workflows by status, recovery attempts,
    tool steps checkpointed."""
    if not system_database.exists():
        return ["no DBOS system database was written"]
    try:
        with closing(sqlite3.connect(system_database, timeout=30.0)) as db:
            statuses = db.execute("SELECT status, COUNT(*), COALESCE(SUM(recovery_attempts), 0) "
                                  "FROM workflow_status GROUP BY status").fetchall()
            steps = db.execute("SELECT function_name, COUNT(*) FROM operation_outputs "
                               "WHERE function_name LIKE 'tool_%' GROUP BY function_name"
                               ).fetchall()
    except sqlite3.Error as error:
        return [f"DBOS's system tables could not be read: {error}"]
    workflows = ", ".join(f"{count} {status} (recovery attempts {attempts})"
                          for status, count, attempts in statuses) or "none"
    checkpointed = ", ".join(f"{count} of {name}" for name, count in steps) or "none"
    return [f"DBOS workflow_status: {workflows}; tool steps checkpointed in "
            f"operation_outputs: {checkpointed}"]


def server_log(notes_files: Iterable[Path], approvals: Iterable[ApprovalRow],
               durable: set[str] | None, lost: Sequence[tuple[float, str]],
               system_database: Path, guarded: Sequence[h.Entry] = ()) -> ServerLog:
    """The ServerLog of one run (see the module docstring); `durable` are the attempts whose
    records the sessions' `records` events hold, `lost` is (when, worker name) for each
    killed process whose executor id a new process took over. For the guarded variant,
    `guarded` are the hand-outs and deliveries of the guard's journal (an attempt's intent is
    durable before its tool starts, a result once the guard kept it) and `durable` is None:
    the notes give only the runs' ends."""
    log = ServerLog()
    seen = noted(notes_files, durable)
    log.run_ends += seen.run_ends
    entries = [*seen.hand_outs, *seen.results.values(), *guarded, *inbox_entries(approvals)]
    entries += [h.WorkerDeclaredLost(at, worker) for at, worker in lost]
    log.entries = sorted(entries, key=lambda e: e.at)
    if guarded:
        log.notes.append(
            f"{sum(isinstance(e, h.HandedOut) for e in guarded)} attempts and "
            f"{sum(isinstance(e, h.ResultDelivered) for e in guarded)} results kept, from the "
            "guard's journal")
    else:
        log.notes.append(
            f"{len(seen.hand_outs)} attempts, each noted by the application process that ran "
            f"its tool (DBOS hands nothing out); {len(seen.results)} results that reached a "
            "session's records event")
    log.notes.append(f"{len(lost)} killed processes whose executor id a new process took over")
    log.notes += dbos_tables(system_database)
    return log
