"""The restart rule of a server before an upgrade, for the upgraded executor to be checked
against the journal it left (D-31): its restart ended every call in flight with
outcome_unknown, one whose attempt was only queued and never reached a worker too. The
reference executor keeps such a record, which never changes (TC-REC-1), and its history shows
that the attempt never reached a worker, so reconcile reports the tool did not run
(TC-RCN-HISTORY, D-30).

This is not the rule of this project (D-8 keeps queued attempts queued); `atmostonce serve
--executor atmostonce.executor.before_upgrade:executor` runs it, as the tests of the upgrade do.
"""

from __future__ import annotations

from atmostonce.executor import journal
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.state import Call, Phase
from atmostonce.spec.protocol import Command, Executor, ExecutorConfig, Persist
from atmostonce.spec.records import (
    OUTCOME_UNKNOWN_ERROR,
    UNSPECIFIED_DETAIL,
    AttemptEnd,
    Outcome,
    Record,
)


class BeforeUpgrade(ReferenceExecutor):
    """The reference executor with the older restart rule (D-31)."""

    def resume(self, call: Call, at: float, out: list[Command]) -> None:
        """A call whose attempt is only queued at a restart ends outcome_unknown: the older
        rule, which D-8 replaced."""
        attempt = call.current
        if attempt is None or attempt.phase is not Phase.QUEUED:
            super().resume(call, at, out)
            return
        self.state.end(attempt, AttemptEnd.NOT_REACHED, at)
        out.append(Persist(journal.ended_entry(at, attempt, AttemptEnd.NOT_REACHED, False, "")))
        error = f"{OUTCOME_UNKNOWN_ERROR}: {UNSPECIFIED_DETAIL}"
        self.finalize(call, Outcome(Record.OUTCOME_UNKNOWN, error), "", at, out)


def executor(config: ExecutorConfig) -> Executor:
    """The executor of a server before the upgrade (D-31)."""
    return BeforeUpgrade(config)
