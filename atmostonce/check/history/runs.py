"""The history checker's judges of ground truth, the effect ledger: each run of a tool against
its call's attempts, record and approval, and the runs of one single-attempt tool that overlap
(TC-AMO-3, TC-AMO-4). Properties: A-ONE-WORKER, A-SAME-KEY, A-DID-NOT-RUN-TRUE,
A-NO-ATTEMPT-AFTER-UNKNOWN, A-ONE-RECORD, A-APPROVAL and A-DOUBLE-RUN-SHAPE as a run shows
them; overlapping runs are collected as `DoubleRun`s."""

from __future__ import annotations

from atmostonce.check.history import entries as h
from atmostonce.check.history.members import (
    APPROVED,
    OUTCOME_UNKNOWN,
    REJECTED,
    RUN_RETURNED,
    RUN_TOOL_FAILED,
)
from atmostonce.check.history.state import Call, CheckerState, DoubleRun, HistoryRun
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.records import DID_NOT_RUN_PREFIX


class RunChecks(CheckerState):
    """Judges of `RunStarted` and `RunEnded`."""

    def _run_started(self, e: h.RunStarted, pos: int) -> None:
        c = self._calls.get(e.call) or self._calls.get(e.key)
        if c is None:
            self._bad(PropertyId.A_SAME_KEY, e.key, f"a run of {e.tool} passed a key no call has",
                      pos)
            return
        attempt = c.attempts.get(e.attempt)
        if attempt is None or attempt.worker is None:
            self._bad(PropertyId.A_ONE_WORKER, c,
                      f"{e.worker} ran attempt {e.attempt}, which was never handed out", pos)
        for other in c.runs:
            if other.attempt is not None and other.attempt.id == e.attempt:
                self._bad(PropertyId.A_ONE_WORKER, c,
                          f"attempt {e.attempt} ran at {other.worker} and at {e.worker}",
                          other.pos, pos)
        if c.unreached_pos >= 0:
            self._bad(PropertyId.A_DID_NOT_RUN_TRUE, c,
                      "the tool ran after a snapshot's history showed no attempt reached a "
                      "worker (D-30)", c.unreached_pos, pos)
        record = c.record
        if record is not None:
            if DID_NOT_RUN_PREFIX in c.record_error:
                self._bad(PropertyId.A_DID_NOT_RUN_TRUE, c,
                          "the tool ran after the call recorded that it did not run",
                          c.record_pos, pos)
            elif record is OUTCOME_UNKNOWN:
                self._bad(PropertyId.A_NO_ATTEMPT_AFTER_UNKNOWN, c,
                          f"attempt {e.attempt} ran after the call recorded outcome_unknown",
                          c.record_pos, pos)
            elif record is REJECTED:
                self._bad(PropertyId.A_APPROVAL, c, "the tool ran after the call was rejected",
                          c.record_pos, pos)
            else:
                self._bad(PropertyId.A_ONE_RECORD, c,
                          f"the tool ran after the call recorded {record.value}",
                          c.record_pos, pos)
        if c.policy.requires_approval and c.approval is not APPROVED:
            self._bad(PropertyId.A_APPROVAL, c, f"the tool ran while the call's approval was "
                      f"{c.approval.value}", c.pos, pos)
        run = HistoryRun(c, e.worker, attempt, pos)
        self._runs[e.run] = run
        if c.single:
            self._overlaps(c, run, e.tool, pos)
        c.runs.append(run)

    def _overlaps(self, c: Call, run: HistoryRun, tool: str, pos: int) -> None:
        """A-DOUBLE-RUN-SHAPE, A-FENCE, S-DOUBLE-RUN: the runs of the same single-attempt tool
        still going when this one starts (TC-AMO-3, TC-AMO-4, D-6)."""
        live = self._live_single.setdefault(tool, [])
        for other in live:
            if other.call is c:
                self._bad(PropertyId.A_DOUBLE_RUN_SHAPE, c,
                          f"two runs of this single-attempt call overlap (at {other.worker} "
                          f"and {run.worker})", other.pos, pos)
                continue
            if not other.orphan:
                continue  # two calls both still running: each runs once
            documented = other.orphan_ok
            fence = self.config.fence
            self.double_runs.append(DoubleRun(tool, other.call.key, c.key, documented,
                                              fence, (other.pos, pos)))
            if documented:
                self.witnessed.add(PropertyId.S_DOUBLE_RUN)
        live.append(run)

    def _run_ended(self, e: h.RunEnded, pos: int) -> None:
        run = self._runs.get(e.run)
        if run is None or not run.live:
            return
        run.live = False
        c = run.call
        if e.end is RUN_RETURNED:
            c.returned = True
            run.returned = True
            run.output = e.output
        elif e.end is RUN_TOOL_FAILED:
            run.failure = e.output
        if c.single:
            live = self._live_single.get(c.tool)
            if live is not None and run in live:
                live.remove(run)
