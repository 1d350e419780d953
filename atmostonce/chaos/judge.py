"""The verdict on what one run saw: the history built from the clients' observations, the
faults, the engine's server log and the ledger, checked by the simulator's checkers. A chaos
run ends here, and so does an engine test that scripts its own calls and wants them judged
the same way.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field

from atmostonce.chaos.build import build_history
from atmostonce.chaos.nemesis import FaultLog
from atmostonce.chaos.observations import Observations
from atmostonce.check.history.checkers import History
from atmostonce.check.history.entries import Entry, HistoryViolation
from atmostonce.engines.adapter import Limits, ServerLog
from atmostonce.runtime.ledger_client import LedgerRun, Write
from atmostonce.spec.protocol import ExecutorConfig


@dataclass(frozen=True)
class Judged:
    entries: list[Entry]
    history: History
    violations: list[HistoryViolation] = field(default_factory=list)
    """The history's violations but those of properties the engine cannot show."""
    aside: collections.Counter[str] = field(default_factory=collections.Counter)
    """How many findings of each property the engine declares not checkable were set aside:
    its history lacks what they need (Temporal keeps only a call's last attempt start), so
    what it seems to show of them is no evidence either way."""

    def notes(self) -> list[str]:
        return [f"{n} finding(s) of {pid} set aside: not checkable on this engine, so what "
                "its history seems to show of it is no evidence either way"
                for pid, n in sorted(self.aside.items())]


def judge(obs: Observations, faults: FaultLog, log: ServerLog, runs: Sequence[LedgerRun],
          writes: Sequence[Write], config: ExecutorConfig, limits: Limits, end: float,
          quiescent: bool = True) -> Judged:
    """The run's history, checked; the eventually-properties only when the run ended
    `quiescent` (every call had its chance to reach a record)."""
    entries = build_history(obs, faults, log, runs, writes, config, end,
                            pauses_stop_runs=limits.pauses_stop_runs,
                            renewals_logged=limits.pauses_stop_runs and limits.renewals_logged)
    history = History(config, attempts_survive_restart=limits.attempts_survive_restart)
    for entry in entries:
        history.append(entry)
    if quiescent:
        history.finish()
    return Judged(entries, history,
                  [v for v in history.violations if v.property not in limits.not_checkable],
                  collections.Counter(v.property for v in history.violations
                                      if v.property in limits.not_checkable))
