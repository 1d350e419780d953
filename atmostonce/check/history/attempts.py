"""The history checker's judges of attempts, as the executor queued and handed them out: the
timers (an attempt queued, a call waiting for approval, a deadline or a run timeout fired),
each hand-out against its call, its approval, its record and the fence (D-5, D-6), and how the
call's current attempt stopped counting: cancelled or timed out, its worker lost, or a server
restart (D-8). Properties: A-ONE-ATTEMPT, A-ONE-WORKER, A-RETRY-CLASSES, A-SAME-KEY, A-FENCE,
A-EXHAUSTED-RECORD (no attempt beyond max_attempts),
and A-APPROVAL, A-ONE-RECORD, A-DID-NOT-RUN-TRUE, A-POLICY-SNAPSHOT as a hand-out shows them, and
A-CANCEL-ON-TIMEOUT."""

from __future__ import annotations

from atmostonce.check.history import entries as h
from atmostonce.check.history.members import (
    APPROVAL_DEADLINE,
    APPROVED,
    OUTCOME_UNKNOWN,
    QUEUE_TIMEOUT,
    READ,
    REJECTED,
    WAITING,
)
from atmostonce.check.history.state import (
    GAVE_UP,
    LOST,
    RESTART,
    Attempt,
    Call,
    CheckerState,
    policy_text,
    with_article,
)
from atmostonce.spec.approval import ApprovalEvent, answer
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import TimerKind
from atmostonce.spec.session import ToolCallStatus

EARLY = 0.001
"""Seconds by which an approval deadline may seem to fire before the call's kept deadline:
the harness notes the ask just before the executor takes it."""


class AttemptChecks(CheckerState):
    """Judges of `TimerStarted`, `TimerFired`, `HandedOut`, `Cancelled`, `StartDelivered`,
    `ResultDelivered`, `WorkerDeclaredLost` and `ServerRestarted`."""

    def _timer_started(self, e: h.TimerStarted, pos: int) -> None:
        c = self._calls.get(e.key)
        if c is None:
            return
        kind = e.kind
        if kind is APPROVAL_DEADLINE:
            if not c.policy.requires_approval:
                self._bad(PropertyId.A_POLICY_SNAPSHOT, c,
                          "the call waits for approval, but the policy in force when it was "
                          f"asked ({policy_text(c.policy)}) needs none", c.pos, pos)
        elif kind is QUEUE_TIMEOUT:
            self._queue_timers = True
            if e.subject not in c.attempts:
                self._new_attempt(c, e.subject, pos)

    def _new_attempt(self, c: Call, attempt_id: str, pos: int) -> Attempt:
        """An attempt the call did not have before: one is all a single-attempt call gets."""
        attempt = Attempt(c, attempt_id)
        c.attempts[attempt_id] = attempt
        self._attempts[attempt_id] = attempt
        if c.record is OUTCOME_UNKNOWN:
            self._bad(PropertyId.A_NO_ATTEMPT_AFTER_UNKNOWN, c,
                      f"attempt {attempt_id} came after the call recorded outcome_unknown",
                      c.record_pos, pos)
        count = len(c.attempts)
        if c.single and count > 1:
            effect = c.policy.effect.value
            earlier = _earlier(c, attempt)
            self._bad(PropertyId.A_ONE_ATTEMPT, c,
                      f"{with_article(effect)} call got {count} attempts",
                      c.pos, *earlier, pos)
            self._bad(PropertyId.A_RETRY_CLASSES, c,
                      f"{with_article(effect)} call was attempted again",
                      c.pos, *earlier, pos)
            self._followed_later(c, lambda p: p.retries_allowed, "it got another attempt", pos)
        elif count > self.config.max_attempts:
            self._bad(PropertyId.A_EXHAUSTED_RECORD, c,
                      f"{with_article(c.policy.effect.value)} call got {count} attempts, more "
                      f"than its {self.config.max_attempts}", c.pos, *_earlier(c, attempt), pos)
        return attempt

    def _timer_fired(self, e: h.TimerFired, pos: int) -> None:
        if e.kind is TimerKind.APPROVAL_DEADLINE:
            c = self._calls.get(e.key)
            if c is not None:
                kept = c.asked_at + c.deadline
                if c.approval is WAITING and e.at < kept - EARLY:
                    self._bad(PropertyId.A_APPROVAL, c,
                              f"the approval deadline rejected the call {e.at - c.asked_at:.3f}s "
                              f"after its ask, before the {c.deadline:g}s it kept (D-32)",
                              c.pos, pos)
                new, _ = answer(c.approval, ApprovalEvent.DEADLINE)
                if new is not c.approval:
                    c.approval = new
                    c.approval_pos = pos
                    c.approval_at = e.at
        elif e.kind is QUEUE_TIMEOUT:
            attempt = self._attempts.get(e.subject)
            if attempt is not None and attempt.worker is None:
                attempt.expired_pos = pos
        elif e.kind is TimerKind.RUN_TIMEOUT:
            attempt = self._attempts.get(e.subject)
            if attempt is not None:
                c = attempt.call
                timeout = self.config.run_timeout
                if (attempt.started and attempt.epoch == self._epoch
                        and e.at < attempt.started_at + timeout - EARLY):
                    self._bad(PropertyId.A_CANCEL_ON_TIMEOUT, c,
                              f"attempt {attempt.id}'s run timeout fired "
                              f"{e.at - attempt.started_at:.3f}s after its Started reached the "
                              f"executor, before the {timeout:g}s it counts again from there",
                              attempt.pos, pos)
                if (attempt is c.current and attempt.cause is None and c.record is None
                        and attempt.worker is not None and attempt.epoch == self._epoch):
                    self._cancels_due[attempt.id] = (attempt, pos)
                self._attempt_ends(attempt, GAVE_UP, pos)

    @staticmethod
    def _attempt_ends(attempt: Attempt, cause: str, pos: int) -> None:
        """The executor stopped counting on the call's current attempt, for `cause`."""
        c = attempt.call
        if attempt is c.current and attempt.cause is None and c.record is None:
            attempt.cause = cause
            attempt.cause_pos = pos

    def _handed_out(self, e: h.HandedOut, pos: int) -> None:
        c = self._calls.get(e.call)
        if c is None:
            c = self._calls.get(e.key)
            if c is None:
                self._bad(PropertyId.A_SAME_KEY, e.key,
                          f"attempt {e.attempt} was handed out with a key no call has", pos)
                return
        if e.key != c.key:
            self._bad(PropertyId.A_SAME_KEY, c, f"attempt {e.attempt} passes the key {e.key!r}",
                      c.pos, pos)
        if not e.persisted_first:
            self._bad(PropertyId.A_DID_NOT_RUN_TRUE, c,
                      f"attempt {e.attempt} was told to {e.worker} before its hand-out was "
                      "persisted (D-5)", pos)
        if self.config.fence and c.single:
            self._fence(c, e.attempt, pos)
        if e.number > 1 and (c.single or e.number > self.config.max_attempts):
            pid = PropertyId.A_ONE_ATTEMPT if c.single else PropertyId.A_EXHAUSTED_RECORD
            allowed = 1 if c.single else self.config.max_attempts
            self._bad(pid, c, f"{with_article(c.policy.effect.value)} call's attempt number "
                      f"{e.number} was handed out, more than its {allowed}", c.pos, pos)
        attempt = c.attempts.get(e.attempt)
        if attempt is not None and attempt.expired_pos >= 0:
            self._bad(PropertyId.A_ONE_ATTEMPT if c.single else PropertyId.A_EXHAUSTED_RECORD,
                      c, f"attempt {e.attempt} was handed out after its queue timeout had ended "
                      "it: no worker took it in time, so it never reached one (D-10)",
                      attempt.expired_pos, pos)
        if attempt is not None and attempt.worker is not None:
            earlier = attempt.worker
            again = "again" if earlier == e.worker else f"after {earlier}"
            self._bad(PropertyId.A_ONE_WORKER, c,
                      f"attempt {e.attempt} was handed to {e.worker} {again}",
                      attempt.pos, pos)
        record = c.record
        if record is not None and record is not OUTCOME_UNKNOWN:
            pid = PropertyId.A_APPROVAL if record is REJECTED else PropertyId.A_ONE_RECORD
            self._bad(pid, c, f"attempt {e.attempt} was handed out after the record "
                      f"{record.value}", c.record_pos, pos)
        if c.result_ok is not None:
            self._bad(PropertyId.A_RETRY_CLASSES, c,
                      f"attempt {e.attempt} was handed out after the tool "
                      f"{'returned' if c.result_ok else 'reported a failure'} (D-3)",
                      c.result_pos, pos)
        if c.policy.requires_approval and c.approval is not APPROVED:
            self._bad(PropertyId.A_APPROVAL, c,
                      f"attempt {e.attempt} was handed out while the call's approval was "
                      f"{c.approval.value}", c.pos, c.approval_pos, pos)
            if c.approval is WAITING:
                self._bad(PropertyId.A_POLICY_SNAPSHOT, c,
                          "the call did not wait for approval, but the policy in force when "
                          f"it was asked ({policy_text(c.policy)}) needs it", c.pos, pos)
        if c.policy.effect is READ and c.lost_before:
            self.witnessed.add(PropertyId.S_READ_RETRY_AFTER_LOSS)
        if attempt is None:
            attempt = self._new_attempt(c, e.attempt, pos)
        attempt.worker = e.worker
        attempt.pos = pos
        attempt.epoch = self._epoch
        c.handed += 1
        if c.first_hand < 0:
            c.first_hand = pos
            c.first_hand_at = e.at
        c.current = attempt
        c.result_ok = None
        c.result_pos = -1
        held = self._worker_attempts.get(e.worker)
        if held is None:
            self._worker_attempts[e.worker] = [attempt]
        else:
            held.append(attempt)

    def _cancelled(self, e: h.Cancelled, pos: int) -> None:
        attempt = self._attempts.get(e.attempt)
        if attempt is not None:
            due = self._cancels_due.pop(attempt.id, None)
            if due is not None and e.worker != attempt.worker:
                self._bad(PropertyId.A_CANCEL_ON_TIMEOUT, attempt.call,
                          f"attempt {attempt.id} timed out at {attempt.worker}, but the "
                          f"cancel went to {e.worker}", due[1], pos)
            self._attempt_ends(attempt, GAVE_UP, pos)

    def _cancels_never_sent(self) -> None:
        """A-CANCEL-ON-TIMEOUT at quiescence: every attempt that timed out while out at a
        worker was cancelled there (TC-AMO-3)."""
        for attempt, pos in self._cancels_due.values():
            self._bad(PropertyId.A_CANCEL_ON_TIMEOUT, attempt.call,
                      f"attempt {attempt.id} timed out while out at {attempt.worker}, and that "
                      "worker was never sent a cancel", attempt.pos, pos)
        self._cancels_due.clear()

    def _start_delivered(self, e: h.StartDelivered, pos: int) -> None:
        attempt = self._attempts.get(e.attempt)
        if attempt is not None and not attempt.started:
            attempt.started = True
            attempt.started_at = e.at

    def _result_delivered(self, e: h.ResultDelivered, pos: int) -> None:
        """The tool's answer reached the executor while its attempt was still the current one,
        so it decides the call (D-3, TC-REC-SUCC)."""
        attempt = self._attempts.get(e.attempt)
        if attempt is None:
            return
        c = attempt.call
        if (attempt is not c.current or c.record is not None or attempt.cause is not None
                or attempt.worker != e.worker or attempt.epoch != self._epoch):
            return
        c.result_ok = e.ok
        c.result_pos = pos

    def _worker_lost(self, e: h.WorkerDeclaredLost, pos: int) -> None:
        for attempt in self._worker_attempts.pop(e.worker, ()):
            c = attempt.call
            if attempt is not c.current or c.record is not None:
                continue
            c.lost_before = True
            self._attempt_ends(attempt, LOST, pos)
            if not attempt.started and any(r.attempt is attempt for r in c.runs):
                self.witnessed.add(PropertyId.S_LOST_BEFORE_HEARTBEAT)

    def _server_restarted(self, e: h.ServerRestarted, pos: int) -> None:
        """D-8: every attempt out at a worker is lost to the restart; its run may go on. On an
        engine whose attempts survive a restart they go on into the new life instead."""
        self._epoch += 1
        self._cancels_due.clear()  # a restart may cut the batch that held the cancel
        if self.attempts_survive_restart:
            for attempts in self._worker_attempts.values():
                for attempt in attempts:
                    attempt.epoch = self._epoch
            return
        for attempts in self._worker_attempts.values():
            for attempt in attempts:
                c = attempt.call
                if attempt is c.current and c.record is None:
                    c.lost_before = True
                    self._attempt_ends(attempt, RESTART, pos)
        self._worker_attempts.clear()

    def _fence(self, c: Call, attempt: str, pos: int) -> None:
        """A-FENCE: with the fence on, an attempt of a single-attempt tool is handed out only
        when no run of the tool that the engine gave up on still goes (D-6). An attempt handed
        out earlier may overlap a run abandoned later: those are two calls running side by
        side, which the fence does not hold back."""
        for other in self._live_single.get(c.tool, ()):
            if other.orphan and other.call is not c:
                self._bad(PropertyId.A_FENCE, c,
                          f"with the fence on, attempt {attempt} was handed out while the "
                          f"abandoned run of {other.call.key} (recorded "
                          f"{_name(other.call.record)}) still went",
                          other.pos, other.call.record_pos, pos)
                return


def _earlier(c: Call, attempt: Attempt) -> list[int]:
    """Where the call was approved, where its attempts before `attempt` were handed out and
    stopped counting, and where its runs so far started: what an excerpt of a second attempt
    shows before it."""
    positions = [p for a in c.attempts.values() if a is not attempt for p in (a.pos, a.cause_pos)]
    return [c.approval_pos, *positions, *(run.pos for run in c.runs)]


def _name(status: ToolCallStatus | None) -> str:
    return status.value if status is not None else "nothing"
