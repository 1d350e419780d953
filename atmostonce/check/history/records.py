"""The history checker's judges of records: each call's record as the session API shows it, in
`tool_call_finished` events and in snapshots, judged when first seen against what happened to
the call (its hand-outs, its runs in the ledger, its approval, how its attempt ended), and the
reconcile job's reports naming it. Properties: A-ONE-RECORD, A-SAME-KEY (the snapshot's key),
A-DID-NOT-RUN-TRUE, A-SUCCEEDED-RETURNED, A-UNKNOWN-REACHED, A-EXHAUSTED-RECORD, A-APPROVAL and
A-POLICY-SNAPSHOT (a rejected record), A-RECORD-MEANING (a failed record, and every record's
error in every sighting: the snapshot, the event, after a restart), A-DOUBLE-RUN-SHAPE
(runs left going at the record), A-TOOL-RESULT (the tool results a snapshot's history holds)
and E-RECONCILE-ONCE (a second report)."""

from __future__ import annotations

from atmostonce.check.history import entries as h
from atmostonce.check.history.members import (
    AWAITING_APPROVAL,
    FAILED,
    OUTCOME_UNKNOWN,
    READ,
    REJECTED,
    RUNNING,
    SUCCEEDED,
    WAITING,
)
from atmostonce.check.history.state import (
    GAVE_UP,
    LOST,
    RESTART,
    Call,
    CheckerState,
    policy_text,
    with_article,
)
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.policy import EffectClass, EffectivePolicy
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.reconcile import reported_keys
from atmostonce.spec.records import (
    DID_NOT_RUN_PREFIX,
    OUTCOME_UNKNOWN_ERROR,
    AttemptEnd,
    AttemptProgress,
    FailureKind,
    Outcome,
    Record,
    RejectReason,
    failure_text,
    reject_text,
    unknown_detail,
)
from atmostonce.spec.session import Message, MessageRole, ToolCallStatus, tool_result_text


class RecordChecks(CheckerState):
    """Judges of `SnapshotSeen`, `RecordPublished` and `UserMessageSent`."""

    def _snapshot_seen(self, e: h.SnapshotSeen, pos: int) -> None:
        c = self._calls.get(e.key)
        if c is None:
            self._bad(PropertyId.A_ONE_RECORD, e.key, "the snapshot lists a call nobody asked", pos)
            return
        if e.idempotency_key and e.idempotency_key != c.key:
            self._bad(PropertyId.A_SAME_KEY, c,
                      f"the snapshot shows the key {e.idempotency_key!r} for this call",
                      c.pos, pos)
        status = e.status
        if e.kept is not None:
            self._judge_kept(c, e.kept, pos)
        if e.progress is not None:
            self._bad(PropertyId.A_RECORD_MEANING, c, f"the snapshot's history shows {e.progress}"
                      ", not the progress the page names for that end (D-30)", c.pos, pos)
        if e.results is not None:
            self._tool_results(c, status, e.error, e.results, pos)
        if status is RUNNING or status is AWAITING_APPROVAL:
            if c.snap is not None:
                self._bad(PropertyId.A_ONE_RECORD, c,
                          f"the snapshot showed {c.snap.value}, then {status.value}",
                          c.snap_pos, pos)
            if c.record is not None:
                self._bad(PropertyId.A_ONE_RECORD, c,
                          f"the snapshot shows {status.value} after the record "
                          f"{c.record.value}", c.record_pos, pos)
            if status is AWAITING_APPROVAL and not c.policy.requires_approval:
                self._bad(PropertyId.A_POLICY_SNAPSHOT, c,
                          "the snapshot shows it awaiting approval, but the policy in force "
                          f"when it was asked ({policy_text(c.policy)}) needs none",
                          c.pos, pos)
            return
        if c.snap is not None and status is not c.snap:
            self._bad(PropertyId.A_ONE_RECORD, c,
                      f"the snapshot showed {c.snap.value}, then {status.value}",
                      c.snap_pos, pos)
            return
        if c.published is not None and status is not c.published:
            self._bad(PropertyId.A_ONE_RECORD, c,
                      f"the snapshot shows {status.value}, the event said {c.published.value}",
                      c.published_pos, pos)
            return
        c.snap = status
        c.snap_pos = pos
        if c.record is None:
            self._recorded(c, status, e.error, pos, e.at)
        self._judge_error(c, status, e.error, "the snapshot", pos)
        if e.unreached:
            self._history_unreached(c, pos)

    def _judge_kept(self, c: Call, kept: tuple[EffectClass, bool, float | None],
                    pos: int) -> None:
        """A-POLICY-SNAPSHOT for what the snapshot says the call kept at ask time: the effect
        class and approval rule in force then (TC-SNAP-1), and for a call that needs approval
        the deadline it kept where the engine shows one, none otherwise (D-32)."""
        effect, approval, deadline = kept
        policy = c.policy
        if effect is not policy.effect or approval != policy.requires_approval:
            shown = f"{effect.value}, {'approval' if approval else 'no approval'}"
            self._bad(PropertyId.A_POLICY_SNAPSHOT, c,
                      f"the snapshot says it kept {shown}, but the policy in force when it was "
                      f"asked was {policy_text(policy)}", c.pos, pos)
        elif approval and deadline is not None and abs(deadline - c.deadline) > _SAME_DEADLINE:
            self._bad(PropertyId.A_POLICY_SNAPSHOT, c,
                      f"the snapshot shows the approval deadline {deadline!r}, but the call "
                      f"kept {c.deadline!r} s when it was asked (D-32)", c.pos, pos)
        elif not approval and deadline is not None:
            self._bad(PropertyId.A_POLICY_SNAPSHOT, c,
                      f"the snapshot shows the approval deadline {deadline!r} for a call that "
                      "needs no approval (D-32)", c.pos, pos)

    def _tool_results(self, c: Call, status: ToolCallStatus, error: str,
                      results: tuple[str, ...], pos: int) -> None:
        """A-TOOL-RESULT: the session history holds no tool result for a call without a record
        and exactly one for a recorded call, the text its record and error make; a succeeded
        call's is judged against its runs' outputs at quiescence (`finished_results`)."""
        if not status.final:
            if results:
                self._bad(PropertyId.A_TOOL_RESULT, c,
                          f"the snapshot shows it {status.value}, yet the "
                          f"session history already holds its tool result {results[0]!r}", pos)
            return
        if len(results) != 1:
            self._bad(PropertyId.A_TOOL_RESULT, c, f"the snapshot shows it {status.value}, and the "
                      f"session history holds {len(results)} tool results for it, not one: "
                      f"{list(results)!r}", pos)
            return
        if status is SUCCEEDED:
            if c.tool_result is None:
                c.tool_result = results[0]
                c.tool_result_pos = pos
            return
        expected = tool_result_text(Outcome(Record(status.value), error))
        if results[0] != expected:
            self._bad(PropertyId.A_TOOL_RESULT, c,
                      f"the snapshot shows it {status.value}, and its tool "
                      f"result reads {results[0]!r}, not {expected!r}", pos)

    def finished_results(self) -> None:
        """A-TOOL-RESULT at quiescence: a succeeded call's tool result is an output one of its
        runs returned, judged when the ledger gives the output of every run that returned."""
        for c in self._calls.values():
            text = c.tool_result
            if text is None:
                continue
            outputs = [run.output for run in c.runs if run.returned]
            if outputs and None not in outputs and text not in outputs:
                self._bad(PropertyId.A_TOOL_RESULT, c,
                          f"succeeded with the tool result {text!r}, which "
                          f"no run of it returned (they returned {outputs!r})",
                          c.tool_result_pos)

    def _history_unreached(self, c: Call, pos: int) -> None:
        """A-DID-NOT-RUN-TRUE for the Flow's history (D-30): reconcile reports that a recorded
        call's tool did not run when its history shows no attempt reached a worker, so that
        must hold like the did-not-run wording (`runs` judges the runs that come later)."""
        if c.unreached_pos < 0:
            c.unreached_pos = pos
        if c.handed or c.runs:
            self._bad(PropertyId.A_DID_NOT_RUN_TRUE, c,
                      "the snapshot's history shows no attempt reached a worker, after "
                      f"{c.handed} hand-out(s) to a worker and {len(c.runs)} run(s) in the "
                      "ledger", c.first_hand, c.runs[0].pos if c.runs else -1, pos)

    def _record_published(self, e: h.RecordPublished, pos: int) -> None:
        c = self._calls.get(e.key)
        if c is None:
            self._bad(PropertyId.A_ONE_RECORD, e.key,
                      "a record was published for a call nobody asked", pos)
            return
        status = e.status
        if status is RUNNING or status is AWAITING_APPROVAL:
            self._bad(PropertyId.A_ONE_RECORD, c, f"a tool_call_finished event with status "
                      f"{status.value}, which is no record", pos)
            return
        if c.record is None or status is c.record:
            self._judge_error(c, status, e.error, "the event", pos)
        if c.published is not None:
            if status is not c.published:
                self._bad(PropertyId.A_ONE_RECORD, c,
                          f"the record changed from {c.published.value} to {status.value}",
                          c.published_pos, pos)
            elif c.published_epoch == self._epoch:
                self._bad(PropertyId.A_ONE_RECORD, c,
                          f"the record {status.value} was published twice",
                          c.published_pos, pos)
            c.published_epoch = self._epoch
            return
        c.published = status
        c.published_pos = pos
        c.published_epoch = self._epoch
        if c.snap is not None and status is not c.snap:
            self._bad(PropertyId.A_ONE_RECORD, c,
                      f"the event says {status.value}, the snapshot showed {c.snap.value}",
                      c.snap_pos, pos)
            return
        if c.record is None:
            self._recorded(c, status, e.error, pos, e.at)

    def _recorded(self, c: Call, status: ToolCallStatus, error: str, pos: int,
                  at: float) -> None:
        """The call's record, first seen: judge it against what happened to the call."""
        c.record = status
        c.record_pos = pos
        c.record_at = at
        c.record_error = error
        if DID_NOT_RUN_PREFIX in error and (c.handed or c.runs):
            self._bad(PropertyId.A_DID_NOT_RUN_TRUE, c,
                      f"recorded {status.value} saying the tool did not run, after "
                      f"{c.handed} hand-out(s) to a worker and {len(c.runs)} run(s) in "
                      "the ledger", c.first_hand, c.runs[0].pos if c.runs else -1, pos)
        if status is SUCCEEDED and not c.returned:
            self._bad(PropertyId.A_SUCCEEDED_RETURNED, c,
                      "recorded succeeded, but no run of the tool returned a result",
                      c.pos, pos)
        elif status is OUTCOME_UNKNOWN and not c.handed:
            self._bad(PropertyId.A_UNKNOWN_REACHED, c,
                      "recorded outcome_unknown, though no attempt was handed to a worker",
                      c.pos, pos)
        elif status is REJECTED:
            self._judge_rejected(c, pos, at)
        if status in (FAILED, OUTCOME_UNKNOWN) and c.handed:
            self._judge_exhausted(c, status, pos)
        if status is FAILED:
            self._judge_failed_meaning(c, error, pos)
        if c.single and c.runs:
            self._judge_orphans(c, status, pos)

    def _judge_error(self, c: Call, status: ToolCallStatus, error: str, where: str,
                     pos: int) -> None:
        """A-RECORD-MEANING for the error field, in each place the record is seen, judged by
        what happened to the call, never by the executor's other copies of it: a failed call
        no attempt of which reached a worker opens with the did-not-run wording
        (TC-REC-NOTRUN); one the tool's own failure decided carries that failure as the ledger
        shows it, since the model reads it (D-3); an outcome_unknown one carries its failure
        (TC-RCN-FIND); a rejected one says whether a person or the deadline rejected it
        (TC-REC-REJ), and a failure it names is the one the history shows; a cancelled single
        attempt recorded failed, by D-4's other choice, says the tool may still be running
        (F-7)."""
        wrong = ""
        if status is FAILED:
            reached = bool(c.handed or c.runs)
            current = c.current
            if error.startswith(DID_NOT_RUN_PREFIX) and _REACHED_TAG in error:
                wrong = ("it says the tool did not run, and names the progress of an attempt that "
                         "reached a worker: the page's wording is for a call none of whose "
                         "attempts reached one")
            elif not reached and c.result_ok is None and not error.startswith(DID_NOT_RUN_PREFIX):
                wrong = ("no attempt reached a worker, yet it does not open with the page's "
                         f"{DID_NOT_RUN_PREFIX!r}")
            elif c.result_ok is False:
                wrong = _uncarried_failure(c, error)
            elif (c.single and current is not None and current.cause == GAVE_UP
                  and c.result_ok is None and self.config.cancel_records_failed
                  and not error.startswith(_MAY_STILL_BE_RUNNING)):
                wrong = ("its attempt was cancelled after it reached a worker, yet it does not "
                         "say the tool may still be running (F-7)")
        elif status is OUTCOME_UNKNOWN and error.strip() in ("", OUTCOME_UNKNOWN_ERROR):
            wrong = ("it names no failure, though the page puts the failure in the error "
                     "(TC-RCN-FIND)")
        elif status is OUTCOME_UNKNOWN:
            wrong = _wrong_failure(c, error)
        elif status is REJECTED:
            person = c.approval is ApprovalState.REJECTED
            expected = reject_text(RejectReason.PERSON if person else RejectReason.DEADLINE)
            if error != expected:
                wrong = (f"{'a person rejected it' if person else 'its deadline passed'}, so "
                         f"the page's reason reads {expected!r}")
        if wrong:
            self._bad(PropertyId.A_RECORD_MEANING, c,
                      f"{where} shows it {status.value} with the error {error!r}: {wrong}",
                      c.pos, pos)

    def _judge_rejected(self, c: Call, pos: int, at: float) -> None:
        expired = at >= c.asked_at + c.deadline  # by the clock, whenever its timer is seen
        if c.approval not in (ApprovalState.REJECTED, ApprovalState.EXPIRED) and not (
                c.approval is WAITING and expired):
            self._bad(PropertyId.A_APPROVAL, c,
                      f"recorded rejected while its approval was {c.approval.value}: no "
                      "person rejected it and its deadline did not pass", c.pos,
                      c.approval_pos, pos)
        if c.handed:
            self._bad(PropertyId.A_APPROVAL, c, "recorded rejected after an attempt was handed out",
                      c.first_hand, pos)
        if not c.policy.requires_approval:
            self._bad(PropertyId.A_POLICY_SNAPSHOT, c,
                      "recorded rejected, but the policy in force when it was asked "
                      f"({policy_text(c.policy)}) needs no approval", c.pos, pos)

    def _judge_exhausted(self, c: Call, status: ToolCallStatus, pos: int) -> None:
        """A-EXHAUSTED-RECORD: what a reached call that ended for an infrastructure reason
        records (TC-REC-EXHAUST-READ, TC-REC-EXHAUST-OTHER, D-4, D-9), by the choice of D-4
        the engine declares."""
        if c.result_ok is not None:
            return  # the tool's own answer decided the call (D-3)
        current = c.current
        cause = LOST
        cause_pos = -1
        if current is not None and current.cause is not None:
            cause = current.cause
            cause_pos = current.cause_pos
        fails = self.config.cancel_records_failed
        expected = _expected_record(c.policy, cause, fails)
        if status is not expected:
            self._bad(PropertyId.A_EXHAUSTED_RECORD, c,
                      f"{with_article(c.policy.effect.value)} call whose attempt "
                      f"{_CAUSE_TEXT[cause]} recorded {status.value}, not {expected.value}",
                      c.pos, cause_pos, pos)
            self._followed_later(c, lambda p: _expected_record(p, cause, fails) is status,
                                 f"it recorded {status.value}", pos)
            return
        attempts = len(c.attempts)
        limit = self.config.max_attempts
        if not c.single and self._queue_timers and attempts < limit:
            self._bad(PropertyId.A_EXHAUSTED_RECORD, c,
                      f"{with_article(c.policy.effect.value)} call recorded {status.value} after "
                      f"{attempts} of its {limit} attempts", c.pos, pos)

    def _judge_failed_meaning(self, c: Call, error: str, pos: int) -> None:
        """A-RECORD-MEANING for failed: the tool reported a failure, or no attempt reached a
        worker (TC-REC-FAIL); excepted are a read out of attempts after a reach
        (TC-REC-EXHAUST-READ) and, when the engine declares D-4's other choice, a cancelled
        single attempt, whose write may land after the record (F-7)."""
        reported = c.result_ok is False
        if error.startswith(TOOL_ERROR_TEXT) and not reported:
            self._bad(PropertyId.A_RECORD_MEANING, c,
                      "recorded failed as the tool's own failure, but no run of the tool "
                      "reported one", c.pos, pos)
            return
        if reported or not (c.handed or c.runs) or c.policy.effect is READ:
            return
        current = c.current
        cancelled = c.single and current is not None and current.cause == GAVE_UP
        if cancelled and self.config.cancel_records_failed:
            return
        why = ("was cancelled, and the engine declares D-4's default, outcome_unknown"
               if cancelled else "was not cancelled")
        self._bad(PropertyId.A_RECORD_MEANING, c,
                  f"recorded failed after {c.handed} hand-out(s) to a worker, though the tool "
                  f"reported no failure and {why}", c.first_hand, pos)

    def _judge_orphans(self, c: Call, status: ToolCallStatus, pos: int) -> None:
        """A-DOUBLE-RUN-SHAPE: a run still going when its single-attempt call is recorded is
        one the engine gave up on while it could still run (TC-AMO-3, D-8, D-12)."""
        for run in c.runs:
            if not run.live:
                continue
            run.orphan = True
            attempt = run.attempt
            cause = attempt.cause if attempt is not None else None
            restart = attempt is not None and attempt.epoch < self._epoch
            if (status in (FAILED, OUTCOME_UNKNOWN) and cause == GAVE_UP) or (
                    status is OUTCOME_UNKNOWN and restart):
                run.orphan_ok = True
                continue
            self._bad(PropertyId.A_DOUBLE_RUN_SHAPE, c,
                      f"its run at {run.worker} goes on after the call was recorded "
                      f"{status.value}, though the engine never gave up on it while it could "
                      "still run", run.pos, pos)

    def _user_message(self, e: h.UserMessageSent, pos: int) -> None:
        """TC-RCN-ONCE: a report names the call's key; a second one is a violation now."""
        if not e.ok:
            return
        for key in reported_keys((Message(MessageRole.USER, e.text),)):
            c = self._calls.get(key)
            if c is None:
                continue
            c.reports += 1
            if c.reports > 1:
                self._bad(PropertyId.E_RECONCILE_ONCE, c,
                          f"reconcile reported the call {c.reports} times", c.record_pos, pos)


TOOL_ERROR_TEXT = failure_text(FailureKind.TOOL_ERROR)
_SAME_DEADLINE = 1e-9
"""How far apart two deadlines in seconds may be and still be the same one (float rounding)."""
_MAY_STILL_BE_RUNNING = failure_text(FailureKind.MAY_STILL_BE_RUNNING)
_REACHED_TAG = AttemptProgress.NOT_COMPLETED.tag()
_ENDED = {end: unknown_detail(end) for end in AttemptEnd if unknown_detail(end)}
_ENDED_TEXT = {AttemptEnd.WORKER_LOST: "was lost with its worker",
               AttemptEnd.CANCELLED: "was cancelled or timed out"}


def _uncarried_failure(c: Call, error: str) -> str:
    """What is wrong with a failed error the tool's own failure decided, when the ledger says
    which failure the deciding attempt's runs reported and the error carries none of them
    (D-3). When the ledger names the runs' attempts, only the deciding one's count: a run of an
    attempt given up before may report its failure afterwards (TC-AMO-3), deciding nothing,
    and the deciding attempt's tool may have failed before its run was on record."""
    runs = c.runs
    if c.current is not None and any(run.attempt is not None for run in runs):
        runs = [run for run in runs if run.attempt is c.current]
    failures = [run.failure for run in runs if run.failure is not None]
    if failures and not any(failure in error for failure in failures):
        return f"the tool reported the failure {failures[0]!r}, which it does not carry (D-3)"
    return ""


def _wrong_failure(c: Call, error: str) -> str:
    """How an outcome_unknown error says the call's last attempt ended, when it says so,
    against how the history shows it ended (TC-RCN-FIND: the failure in the error)."""
    told = [end for end, text in _ENDED.items() if text in error]
    current = c.current
    if not told or AttemptEnd.NOT_REACHED in told or current is None:
        return ""  # the checker's last attempt is the last one handed out, not the last queued
    if current.cause == GAVE_UP:
        shown = AttemptEnd.CANCELLED
    elif current.cause in (LOST, RESTART):
        shown = AttemptEnd.WORKER_LOST
    else:
        return ""
    if shown in told:
        return ""
    return (f"it says the last attempt {_ENDED_TEXT[told[0]]}, but the history shows it "
            f"{_ENDED_TEXT[shown]}")

_CAUSE_TEXT = {
    GAVE_UP: "was cancelled or timed out",
    LOST: "was lost with its worker",
    RESTART: "was lost at a server restart",
}


def _expected_record(policy: EffectivePolicy, cause: str, cancel_records_failed: bool
                     ) -> ToolCallStatus:
    """The record the spec gives a reached call out of attempts (records.decide), under the
    engine's declared choice of D-4."""
    if policy.effect is READ:
        return FAILED
    if cancel_records_failed and not policy.retries_allowed and cause == GAVE_UP:
        return FAILED
    return OUTCOME_UNKNOWN
