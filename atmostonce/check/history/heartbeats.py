"""The history checker's judge of liveness: a worker heard from keeps its attempt
(A-HEARD-KEEPS-ATTEMPT, TC-REC-LOST, TC-AMO-2, D-12).

The executor declares a worker lost when it has heard nothing from it for the heartbeat
timeout. A declaration that ends an attempt less than that timeout after one of the worker's
heartbeats reached the executor took the attempt from a worker still heard from. Times are
the executor's clock: a heartbeat counts when it was delivered, so one held by a cut link
counts only once it arrives, and a worker cut off, whose heartbeats stop, may be lost. A worker
that connects again, or a server restart, starts its liveness afresh: an attempt lost to a new
connection was lost with the old one (TC-AMO-2, D-8).
"""

from __future__ import annotations

from atmostonce.check.history import entries as h
from atmostonce.check.history.state import CheckerState
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import ExecutorConfig

SLACK = 1e-6
"""Seconds by which a declaration may come before a full heartbeat timeout and still count as
after it: a timer set at a heartbeat's time plus the timeout fires at their float sum, which
can fall a rounding error short of the timeout when the heartbeat's time is subtracted."""


class HeartbeatChecks(CheckerState):
    """Judges of `HeartbeatDelivered`, and of `WorkerConnected`, `WorkerDeclaredLost` and
    `ServerRestarted` as they bear on liveness."""

    def __init__(self, config: ExecutorConfig, attempts_survive_restart: bool = False) -> None:
        super().__init__(config, attempts_survive_restart)
        self._heard: dict[str, tuple[float, int, int]] = {}
        """Each worker's latest heartbeat that reached the executor: its time, its position
        and the position of the one before it (-1 if none)."""
        self._lost_before = config.heartbeat_timeout - SLACK
        """A declaration sooner than this after a heartbeat breaks the property."""

    def _heartbeat_delivered(self, e: h.HeartbeatDelivered, pos: int) -> None:
        heard = self._heard.get(e.worker)
        self._heard[e.worker] = (e.at, pos, -1 if heard is None else heard[1])

    def _liveness_afresh(self, e: h.WorkerConnected, pos: int) -> None:
        self._heard.pop(e.worker, None)

    def _lost_while_heard(self, e: h.WorkerDeclaredLost, pos: int) -> None:
        """A-HEARD-KEEPS-ATTEMPT, judged before the declaration ends the worker's attempts."""
        heard = self._heard.pop(e.worker, None)
        if heard is None:
            return
        last, last_pos, before_pos = heard
        if e.at - last >= self._lost_before:
            return
        for attempt in self._worker_attempts.get(e.worker, ()):
            c = attempt.call
            if attempt is not c.current or c.record is not None or attempt.cause is not None:
                continue
            self._bad(PropertyId.A_HEARD_KEEPS_ATTEMPT, c,
                      f"worker {e.worker} was declared lost at {e.at:.3f} while heartbeating "
                      f"(last heartbeat at {last:.3f}, within the "
                      f"{self.config.heartbeat_timeout:g} s heartbeat timeout), and its "
                      f"attempt {attempt.id} ended as lost with it",
                      attempt.pos, before_pos, last_pos, pos)

    def _forget_heard(self) -> None:
        """A server restart: the new executor times every worker from its recovery."""
        self._heard.clear()
