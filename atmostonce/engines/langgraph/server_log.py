"""What the LangGraph mapping saw, as the `ServerLog` the chaos harness merges with what its
clients saw and the ledger. There is no server: the facts come from the agent processes' notes
(`notes`), the application's store (`store`), the checkpoint file and the adapter itself.

- `HandedOut` for each `started` note: a tool function began an attempt at that process;
- a run end for each `ended` note;
- `ResultDelivered` for each attempt whose tool message the checkpoint file holds, at the
  first `delivering` note of it: the result reached the graph's durable state then (a note
  whose write never landed, its process killed in between, is left out);
- `HandedOut` for each intent in a guard's journal (the guarded variant notes no `started`),
  and `ResultDelivered` for each result a tool gave that the journal kept, in place of the
  `delivering` notes;
- from the approval inbox (the application's store, or a guard's journal): `TimerStarted`
  for each call that waits for approval (its deadline starts at the ask), `ApprovalAnswered`
  for each answer taken, `TimerFired` when the deadline was found passed;
- `WorkerDeclaredLost` when the adapter handed a dead process's threads to the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import ServerLog
from atmostonce.engines.appstore import ApprovalRow
from atmostonce.engines.langgraph.checkpoints import durable_attempts
from atmostonce.engines.noted_log import inbox_entries, noted


def server_log(notes_files: Iterable[Path], approvals: Iterable[ApprovalRow], checkpoints: Path,
               lost: Sequence[tuple[float, str]], hand_outs: Sequence[h.Entry] = (),
               delivered: Sequence[h.Entry] | None = None) -> ServerLog:
    """The ServerLog of one run (see the module docstring); `approvals` is the inbox, `lost`
    is (when, worker name) for each process whose threads went to others, `hand_outs` the
    hand-outs a guard's journal holds (its agent processes note none), and `delivered` the
    results it kept, which then stand for the `delivering` notes."""
    log = ServerLog()
    seen = noted(notes_files, durable_attempts(checkpoints) if delivered is None else None)
    log.run_ends += seen.run_ends
    entries = [*seen.hand_outs, *hand_outs, *inbox_entries(approvals)]
    entries += seen.results.values() if delivered is None else delivered
    hand_outs_seen = len(seen.hand_outs) + len(hand_outs)
    entries += [h.WorkerDeclaredLost(at, worker) for at, worker in lost]
    log.entries = sorted(entries, key=lambda e: e.at)
    log.notes.append(
        f"{hand_outs_seen} attempts, each noted by the agent process that ran its tool or "
        f"written by the guard before it (LangGraph hands nothing out); "
        f"{len(seen.results) if delivered is None else len(delivered)} results that reached the "
        f"checkpoints or the guard's journal; {len(lost)} agent processes whose threads "
        "were handed on")
    return log
