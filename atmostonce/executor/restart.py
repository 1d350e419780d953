"""The rules of a restart (D-8): the tables rebuilt from the journal (`recovery`), then each call
picked up where its journal left it.
"""

from __future__ import annotations

from collections.abc import Sequence

from atmostonce.executor.members import (
    APPROVAL,
    APPROVAL_ID,
    BACKOFF,
    BACKOFF_ID,
    ENDED,
    HEARTBEAT,
    QUEUE,
    QUEUE_ID,
    QUEUED,
    WAITING,
)
from atmostonce.executor.recovery import replay
from atmostonce.executor.state import Attempt, Call
from atmostonce.executor.timers import timer_id
from atmostonce.executor.workers import WorkerRules
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import JSON, Command, StartTimer
from atmostonce.spec.records import RejectReason, rejected


class RestartRules(WorkerRules):
    """Restart (D-8, TC-RCN-ASK)."""

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        """Rebuild from the journal, then handle the restart (D-8): attempts out at a worker end
        as lost to it, queued ones stay queued, waiting approvals keep their own deadline (D-32),
        and every
        worker that may still run an abandoned run must come back or be declared lost."""
        if not self.state.empty:
            raise SpecError("recover needs a fresh executor; this one already has state")
        replay(self.state, journal, self.decision)
        out: list[Command] = []
        for call in list(self.state.calls.values()):
            self.resume(call, at, out)
        for worker in list(self.state.abandoned_at):
            out.append(StartTimer(timer_id(HEARTBEAT, worker), self.config.heartbeat_timeout,
                                  HEARTBEAT, worker))
        return out

    def resume(self, call: Call, at: float, out: list[Command]) -> None:
        """Pick the call up after a restart where its journal left it (D-8)."""
        attempt = call.current
        if attempt is not None and attempt.phase is not ENDED:
            if attempt.phase is QUEUED:
                out.append(StartTimer(QUEUE_ID + attempt.id, self.config.queue_timeout,
                                      QUEUE, attempt.id, call.key))
            else:
                self.recover_handed(attempt, at, out)
            return
        if call.outcome is not None:
            return
        if call.pending is not None:
            self.finalize(call, call.pending, call.pending_output, at, out)
        elif call.approval is ApprovalState.REJECTED:
            self.finalize(call, rejected(RejectReason.PERSON), "", at, out)
        elif call.approval is ApprovalState.EXPIRED:
            self.finalize(call, rejected(RejectReason.DEADLINE), "", at, out)
        elif call.approval is WAITING:
            left = max(0.0, call.asked_at + self.deadline_of(call) - at)
            out.append(StartTimer(APPROVAL_ID + call.key, left, APPROVAL, call.key,
                                  call.key))
        elif call.backoff:
            out.append(StartTimer(BACKOFF_ID + call.key, self.config.retry_backoff,
                                  BACKOFF, call.key, call.key))
        elif call.attempts_made == 0:
            self.queue_attempt(call, at, out)

    def recover_handed(self, attempt: Attempt, at: float, out: list[Command]) -> None:
        """An attempt out at a worker when the server stopped: the connection is gone and what
        the worker did is unknown, so it is lost to its worker; a single-attempt call's run may
        still go on there (D-8, TC-RCN-ASK)."""
        self.lose_attempt(attempt, at, out, may_go_on=self.single(attempt.call))
