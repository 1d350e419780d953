"""The calls of a history recorded `outcome_unknown`, as a table a person can settle them from:
each call's idempotency key (what to ask the service the tool writes to about), its tool and
session, when it was asked and recorded, how many attempts were handed out and how many runs
the effect ledger saw start (its ground truth of whether the tool ran)."""

from __future__ import annotations

from collections.abc import Sequence

from atmostonce.check.history import entries as h
from atmostonce.report.page import Table
from atmostonce.spec.session import ToolCallStatus

HEADER = ("idempotency key", "tool", "session", "asked (s)", "recorded (s)", "attempts handed out",
          "runs the ledger saw", "error")
CAPTION = ("Each call recorded outcome_unknown: its tool may or may not have run. Ask the "
           "service the tool writes to about the idempotency key, or run `atmostonce reconcile "
           "--session ID`; the ledger's count is this run's ground truth. Times are seconds "
           "since the history's first entry.")


def unknown_calls(entries: Sequence[h.Entry], title: str = "Calls recorded outcome_unknown"
                  ) -> Table | None:
    """The table of the history's outcome_unknown calls in the order they were recorded; None
    when there are none."""
    t0 = entries[0].at if entries else 0.0
    asked: dict[str, h.CallAsked] = {}
    handed: dict[str, int] = {}
    runs: dict[str, int] = {}
    recorded: list[h.RecordPublished] = []
    for e in entries:
        if isinstance(e, h.CallAsked):
            asked.setdefault(e.key, e)
        elif isinstance(e, h.HandedOut):
            handed[e.key] = handed.get(e.key, 0) + 1
        elif isinstance(e, h.RunStarted):
            runs[e.key] = runs.get(e.key, 0) + 1
        elif isinstance(e, h.RecordPublished) and e.status is ToolCallStatus.OUTCOME_UNKNOWN:
            recorded.append(e)
    if not recorded:
        return None
    rows = []
    for r in recorded:
        ask = asked.get(r.key)
        rows.append((r.key, ask.tool if ask else "?", ask.session_id if ask else "?",
                     f"{ask.at - t0:.2f}" if ask else "?", f"{r.at - t0:.2f}",
                     str(handed.get(r.key, 0)), str(runs.get(r.key, 0)), r.error))
    return Table(f"{title} ({len(rows)})", HEADER, tuple(rows), CAPTION)
