"""The history checkers: every always- and eventually-property of `atmostonce.spec.properties`,
evaluated incrementally on a history (`atmostonce.check.history`) and its effect ledger.

Each entry is judged when it arrives, in O(1) amortised time, so a harness can check online;
`finish` adds the eventually-properties once the run was driven to quiescence. What each
property is judged against:

- A-ONE-WORKER: hand-outs and ledger runs of one attempt name one worker, once (TC-AMO-1).
- A-ONE-ATTEMPT: a call whose policy at ask time is single-attempt gets one attempt, counting
  queued attempts (their queue timers name the call) and hand-outs.
- A-NO-ATTEMPT-AFTER-UNKNOWN: no attempt is queued, handed out or run after the record.
- A-ONE-RECORD: one record per call, never changed: a second `tool_call_finished` in one server
  life or with another status, a snapshot that changes a final status or disagrees with the
  event, an attempt or a run after the record.
- A-DID-NOT-RUN-TRUE: the safe-to-call-again wording only when no attempt was handed out and
  the ledger shows no run of the call; a go-ahead told to a worker before its hand-out was
  persisted breaks the rule the wording rests on (D-5).
- A-SUCCEEDED-RETURNED: succeeded only after a run of the call returned (the ledger).
- A-UNKNOWN-REACHED: outcome_unknown only after a hand-out.
- A-EXHAUSTED-RECORD: a call that ended for an infrastructure reason after a hand-out records
  failed if a read, outcome_unknown if an idempotent write, and for a single-attempt call
  failed if it was cancelled or timed out (D-4), outcome_unknown if its worker was lost; a
  retrying class gives up only after max_attempts attempts (TC-REC-RETRY, D-9).
- A-RETRY-CLASSES: no second attempt for a single-attempt class, none after the tool returned
  or reported a failure to the executor (D-3).
- A-SAME-KEY: the go-ahead passes the key of the call the attempt belongs to; the snapshot
  shows the call's own key (TC-KEY-1, TC-KEY-2).
- A-APPROVAL: the replies to answers follow D-7's table; no hand-out or run before an accepted
  approval of a call that needs one, none after a rejection or the deadline; a rejected
  record only after one of those.
- A-POLICY-SNAPSHOT: the policy in force when the call was asked (resolved with the spec,
  TC-SNAP-1) decides whether it waits for approval; a behaviour that follows a policy set
  later is reported as such (TC-SNAP-2).
- A-DOUBLE-RUN-SHAPE: no two runs of one single-attempt call overlap, and a run of one goes
  on after its record only if the engine gave up on it while it could still run: cancelled
  or timed out (TC-AMO-3), or lost at a server restart (D-8); a worker declared lost has
  stopped its runs (D-12).
- A-FENCE: with the fence on, no attempt of a single-attempt tool is handed out while a run of
  the same tool that the engine gave up on still goes (D-6).
- E-EVERY-CALL-RECORDED: at quiescence every call has a record (published or in a snapshot).
- E-RECONCILE-ONCE: user messages name each outcome_unknown call's key exactly once: twice is
  reported as soon as it happens, never only at quiescence (TC-RCN-ONCE).

Sometimes-properties are collected as witnesses (`witnessed`, complete after `finish`), for
statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from atmostonce.check import history as h
from atmostonce.check.policies import PolicyBook
from atmostonce.spec.approval import (
    REPLY_TEXT,
    ApprovalEvent,
    ApprovalReply,
    ApprovalState,
    answer,
    initial_approval,
)
from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
)
from atmostonce.spec.properties import record_witness_id
from atmostonce.spec.protocol import ExecutorConfig, TimerKind
from atmostonce.spec.reconcile import reported_keys
from atmostonce.spec.records import DID_NOT_RUN_PREFIX, Record
from atmostonce.spec.session import Message, MessageRole, ToolCallStatus

# Enum members the judges test on every entry, as module names: reading a member from its class
# takes a slow attribute lookup each time in CPython 3.11.
_SUCCEEDED = ToolCallStatus.SUCCEEDED
_FAILED = ToolCallStatus.FAILED
_REJECTED = ToolCallStatus.REJECTED
_OUTCOME_UNKNOWN = ToolCallStatus.OUTCOME_UNKNOWN
_RUNNING = ToolCallStatus.RUNNING
_AWAITING_APPROVAL = ToolCallStatus.AWAITING_APPROVAL
_WAITING = ApprovalState.WAITING
_APPROVED = ApprovalState.APPROVED
_APPROVE = ApprovalEvent.APPROVE
_REJECT = ApprovalEvent.REJECT
_ACCEPTED = ApprovalReply.ACCEPTED
_READ = EffectClass.READ
_RUN_RETURNED = h.RunEnd.RETURNED
_APPROVAL_DEADLINE = TimerKind.APPROVAL_DEADLINE
_QUEUE_TIMEOUT = TimerKind.QUEUE_TIMEOUT

# The sometimes-property each (effect class, final status) witnesses, by their values: a
# string's hash is cached, an enum member's is computed in Python.
_WITNESS: dict[tuple[str, str], str] = {
    (e._value_, s._value_): record_witness_id(e, Record(s.value))
    for e in EffectClass for s in ToolCallStatus if s.final
}
_REPLY_BY_TEXT = {text: reply for reply, text in REPLY_TEXT.items()}

# How the current attempt of a call stopped counting, as the executor learnt it.
_GAVE_UP = "gave up"  # cancelled or timed out: the run may go on (TC-AMO-3)
_LOST = "lost"  # its worker was declared lost (TC-REC-LOST)
_RESTART = "restart"  # handed out before a server restart (D-8)


@dataclass(frozen=True, slots=True)
class DoubleRun:
    """Two runs of one single-attempt tool that overlapped: the run of `first` that the engine
    gave up on, still going, and the run of `second` that started meanwhile."""

    tool: str
    first: str
    second: str
    documented: bool
    fence: bool
    positions: tuple[int, int]


class CallSummary(NamedTuple):
    """What a finished history says about one call, for statistics; a named tuple, cheap to
    make once per call of every run."""

    key: str
    tool: str
    effect: EffectClass
    status: ToolCallStatus | None
    asked_at: float
    recorded_at: float | None
    attempts: int
    hand_outs: int
    runs: int


class _Attempt:
    """One attempt of a call: queued (no worker yet) or handed out, and how it stopped
    counting as the call's current attempt."""

    __slots__ = ("call", "cause", "cause_pos", "epoch", "id", "pos", "started", "worker")

    def __init__(self, call: _Call, attempt_id: str) -> None:
        self.call = call
        self.id = attempt_id
        self.worker: str | None = None
        self.pos = -1
        self.epoch = -1
        self.cause: str | None = None
        self.cause_pos = -1
        self.started = False
        """Its worker's Started reached the executor."""


class _Call:
    __slots__ = (
        "approval", "approval_pos", "asked_at", "attempts", "current", "first_hand",
        "handed", "key", "lost_before", "policy", "pos", "published", "published_epoch",
        "published_pos", "record", "record_at", "record_error", "record_pos", "reports",
        "result_ok", "result_pos", "returned", "runs", "session", "single", "snap",
        "snap_pos", "tool",
    )

    def __init__(self, key: str, tool: str, session: str, pos: int, at: float,
                 policy: EffectivePolicy) -> None:
        self.key = key
        self.tool = tool
        self.session = session
        self.pos = pos
        self.asked_at = at
        self.policy = policy
        self.single = not policy.retries_allowed
        self.approval = initial_approval(policy.requires_approval)
        self.approval_pos = -1
        self.attempts: dict[str, _Attempt] = {}
        self.handed = 0
        self.first_hand = -1
        self.current: _Attempt | None = None
        self.lost_before = False
        self.result_ok: bool | None = None
        self.result_pos = -1
        self.returned = False
        self.runs: list[_Run] = []
        self.record: ToolCallStatus | None = None
        """The call's record, as first seen in an event or a snapshot."""
        self.record_pos = -1
        self.record_at = 0.0
        self.record_error = ""
        self.published: ToolCallStatus | None = None
        self.published_pos = -1
        self.published_epoch = -1
        self.snap: ToolCallStatus | None = None
        self.snap_pos = -1
        self.reports = 0


class _Run:
    __slots__ = ("attempt", "call", "live", "orphan", "orphan_ok", "pos", "worker")

    def __init__(self, call: _Call, worker: str, attempt: _Attempt | None, pos: int) -> None:
        self.call = call
        self.worker = worker
        self.attempt = attempt
        self.pos = pos
        self.live = True
        self.orphan = False
        """Still going when its call was recorded."""
        self.orphan_ok = False
        """...because the engine gave up on it while it could still run."""


class HistoryChecker:
    """Judges a history entry by entry; `violations` holds what it found, in order."""

    def __init__(self, config: ExecutorConfig, *, attempts_survive_restart: bool = False
                 ) -> None:
        self.config = config
        self.attempts_survive_restart = attempts_survive_restart
        """The engine keeps attempts across a server restart: a restart ends none (D-8)."""
        self.violations: list[h.Violation] = []
        self.fresh: list[h.Violation] = []
        """The violations found since a caller last emptied this list (`observe` does)."""
        self.witnessed: set[str] = set()
        self.double_runs: list[DoubleRun] = []
        self._seen: set[tuple[str, str, str]] = set()
        self._policies = PolicyBook()
        self._calls: dict[str, _Call] = {}
        self._attempts: dict[str, _Attempt] = {}
        self._worker_attempts: dict[str, list[_Attempt]] = {}
        self._runs: dict[int, _Run] = {}
        self._live_single: dict[str, list[_Run]] = {}
        self._epoch = 0
        self._queue_timers = False
        self.judges: dict[type[h.Entry], Callable[[Any, int], None]] = {
            h.PolicySet: self._policy_set,
            h.SessionOpened: self._session_opened,
            h.CallAsked: self._call_asked,
            h.ApprovalAnswered: self._approval_answered,
            h.TimerStarted: self._timer_started,
            h.TimerFired: self._timer_fired,
            h.HandedOut: self._handed_out,
            h.Cancelled: self._cancelled,
            h.StartDelivered: self._start_delivered,
            h.ResultDelivered: self._result_delivered,
            h.RecordPublished: self._record_published,
            h.SnapshotSeen: self._snapshot_seen,
            h.UserMessageSent: self._user_message,
            h.ReconcileRan: _ignore,
            h.RunStarted: self._run_started,
            h.EffectApplied: _ignore,
            h.RunEnded: self._run_ended,
            h.WorkerConnected: _ignore,
            h.WorkerCrashed: _ignore,
            h.WorkerCut: _ignore,
            h.WorkerHealed: _ignore,
            h.WorkerDeclaredLost: self._worker_lost,
            h.ServerRestarted: self._server_restarted,
        }
        """The judge of each kind of entry: `observe` is the judge of the entry's kind and what
        it added to `violations`; `History.append` calls the judges directly."""

    # -- entry points -------------------------------------------------------------------------

    def observe(self, entry: h.Entry, pos: int) -> list[h.Violation]:
        """Judge one entry at history position `pos`; return the violations it revealed."""
        self.judges[type(entry)](entry, pos)
        return self.take_fresh()

    def take_fresh(self) -> list[h.Violation]:
        """The violations found since the last call, which empties `fresh`."""
        found = self.fresh[:]
        self.fresh.clear()
        return found

    def finish(self) -> list[h.Violation]:
        """The eventually-properties, at quiescence; also returns what they found."""
        for c in self._calls.values():
            if c.record is not None:
                self.witnessed.add(_WITNESS[c.policy.effect._value_, c.record._value_])
            if c.record is None:
                self._bad("E-EVERY-CALL-RECORDED", c, "the call never got a record", c.pos)
                continue
            if c.record is _OUTCOME_UNKNOWN:
                if c.reports == 0:
                    self._bad("E-RECONCILE-ONCE", c,
                              "no reconcile report ever named this outcome_unknown call",
                              c.pos, c.record_pos)
                if not c.runs:
                    self.witnessed.add("S-UNKNOWN-NEVER-RAN")
        return self.take_fresh()

    def summaries(self) -> Iterator[CallSummary]:
        for c in self._calls.values():
            status = c.record
            yield CallSummary(c.key, c.tool, c.policy.effect, status, c.asked_at,
                              c.record_at if status is not None else None,
                              len(c.attempts), c.handed, len(c.runs))

    # -- reporting ----------------------------------------------------------------------------

    def _bad(self, pid: str, c: _Call | str, message: str, *positions: int) -> None:
        key = c if isinstance(c, str) else c.key
        mark = (pid, key, message)
        if mark in self._seen:
            return
        self._seen.add(mark)
        v = h.Violation(pid, key, message, tuple(sorted({p for p in positions if p >= 0})))
        self.violations.append(v)
        self.fresh.append(v)

    def _policy_now(self, c: _Call) -> EffectivePolicy:
        return self._policies.now(c.tool, c.session)

    def _followed_later(self, c: _Call, fits: Callable[[EffectivePolicy], bool],
                        what: str, *positions: int) -> None:
        """TC-SNAP-2: when a wrong behaviour is what a policy set after the ask would give,
        say so: the call did not keep the policy it was asked under."""
        later = self._policy_now(c)
        if later != c.policy and fits(later):
            self._bad("A-POLICY-SNAPSHOT", c,
                      f"{what}, as the tool's later policy ({_policy_text(later)}) says, not "
                      f"the policy in force when it was asked ({_policy_text(c.policy)})",
                      c.pos, *positions)

    # -- the agent, people and the session API ---------------------------------------------------

    def _policy_set(self, e: h.PolicySet, pos: int) -> None:
        self._policies.set_policy(e.tool, e.policy, e.hints)

    def _session_opened(self, e: h.SessionOpened, pos: int) -> None:
        self._policies.set_default(e.session_id, e.default_effect)

    def _call_asked(self, e: h.CallAsked, pos: int) -> None:
        """TC-SNAP-1: the call keeps the policy in force now, resolved by the spec."""
        effective = self._policies.now(e.tool, e.session_id)
        self._calls[e.key] = _Call(e.key, e.tool, e.session_id, pos, e.at, effective)

    def _approval_answered(self, e: h.ApprovalAnswered, pos: int) -> None:
        """D-7: the first answer (or the deadline) that lands decides; the reply says so."""
        c = self._calls.get(e.key)
        if c is None:
            if e.ok:
                self._bad("A-APPROVAL", e.key, "an answer for a call nobody asked was accepted",
                          pos)
            return
        state = c.approval
        if (state is _WAITING and not e.ok
                and e.at >= c.asked_at + self.config.approval_deadline):
            state = ApprovalState.EXPIRED  # the deadline landed first; its timer was late
        event = _APPROVE if e.approve else _REJECT
        new, reply = answer(state, event)
        said = _REPLY_BY_TEXT.get(e.text)
        verb = "approval" if e.approve else "rejection"
        if e.ok != (reply is _ACCEPTED) or (said is not None and said is not reply):
            self._bad("A-APPROVAL", c,
                      f"a {verb} of a call in state {state.value} got "
                      f"{'accepted' if e.ok else 'refused'} ({e.text!r}); D-7 says "
                      f"{reply.value}", c.pos, c.approval_pos, pos)
            if (not c.policy.requires_approval and e.ok
                    and self._policy_now(c).requires_approval):
                self._followed_later(c, lambda p: p.requires_approval,
                                     "an answer was accepted", pos)
        if new is not c.approval:
            c.approval = new
            c.approval_pos = pos

    def _timer_started(self, e: h.TimerStarted, pos: int) -> None:
        c = self._calls.get(e.key)
        if c is None:
            return
        kind = e.kind
        if kind is _APPROVAL_DEADLINE:
            if not c.policy.requires_approval:
                self._bad("A-POLICY-SNAPSHOT", c,
                          "the call waits for approval, but the policy in force when it was "
                          f"asked ({_policy_text(c.policy)}) needs none", c.pos, pos)
        elif kind is _QUEUE_TIMEOUT:
            self._queue_timers = True
            if e.subject not in c.attempts:
                self._new_attempt(c, e.subject, pos)

    def _new_attempt(self, c: _Call, attempt_id: str, pos: int) -> _Attempt:
        """An attempt the call did not have before: one is all a single-attempt call gets."""
        attempt = _Attempt(c, attempt_id)
        c.attempts[attempt_id] = attempt
        self._attempts[attempt_id] = attempt
        if c.record is _OUTCOME_UNKNOWN:
            self._bad("A-NO-ATTEMPT-AFTER-UNKNOWN", c,
                      f"attempt {attempt_id} came after the call recorded outcome_unknown",
                      c.record_pos, pos)
        count = len(c.attempts)
        if c.single and count > 1:
            effect = c.policy.effect.value
            self._bad("A-ONE-ATTEMPT", c, f"{_a(effect)} call got {count} attempts", c.pos, pos)
            self._bad("A-RETRY-CLASSES", c, f"{_a(effect)} call was attempted again",
                      c.pos, pos)
            self._followed_later(c, lambda p: p.retries_allowed, "it got another attempt", pos)
        return attempt

    def _timer_fired(self, e: h.TimerFired, pos: int) -> None:
        if e.kind is TimerKind.APPROVAL_DEADLINE:
            c = self._calls.get(e.key)
            if c is not None:
                new, _ = answer(c.approval, ApprovalEvent.DEADLINE)
                if new is not c.approval:
                    c.approval = new
                    c.approval_pos = pos
        elif e.kind is TimerKind.RUN_TIMEOUT:
            attempt = self._attempts.get(e.subject)
            if attempt is not None:
                self._attempt_ends(attempt, _GAVE_UP, pos)

    @staticmethod
    def _attempt_ends(attempt: _Attempt, cause: str, pos: int) -> None:
        """The executor stopped counting on the call's current attempt, for `cause`."""
        c = attempt.call
        if attempt is c.current and attempt.cause is None and c.record is None:
            attempt.cause = cause
            attempt.cause_pos = pos

    def _snapshot_seen(self, e: h.SnapshotSeen, pos: int) -> None:
        c = self._calls.get(e.key)
        if c is None:
            self._bad("A-ONE-RECORD", e.key, "the snapshot lists a call nobody asked", pos)
            return
        if e.idempotency_key and e.idempotency_key != c.key:
            self._bad("A-SAME-KEY", c,
                      f"the snapshot shows the key {e.idempotency_key!r} for this call",
                      c.pos, pos)
        status = e.status
        if status is _RUNNING or status is _AWAITING_APPROVAL:
            if c.snap is not None:
                self._bad("A-ONE-RECORD", c,
                          f"the snapshot showed {c.snap.value}, then {status.value}",
                          c.snap_pos, pos)
            if c.record is not None:
                self._bad("A-ONE-RECORD", c,
                          f"the snapshot shows {status.value} after the record "
                          f"{c.record.value}", c.record_pos, pos)
            if status is _AWAITING_APPROVAL and not c.policy.requires_approval:
                self._bad("A-POLICY-SNAPSHOT", c,
                          "the snapshot shows it awaiting approval, but the policy in force "
                          f"when it was asked ({_policy_text(c.policy)}) needs none",
                          c.pos, pos)
            return
        if c.snap is not None and status is not c.snap:
            self._bad("A-ONE-RECORD", c,
                      f"the snapshot showed {c.snap.value}, then {status.value}",
                      c.snap_pos, pos)
            return
        if c.published is not None and status is not c.published:
            self._bad("A-ONE-RECORD", c,
                      f"the snapshot shows {status.value}, the event said {c.published.value}",
                      c.published_pos, pos)
            return
        c.snap = status
        c.snap_pos = pos
        if c.record is None:
            self._recorded(c, status, e.error, pos, e.at)

    def _record_published(self, e: h.RecordPublished, pos: int) -> None:
        c = self._calls.get(e.key)
        if c is None:
            self._bad("A-ONE-RECORD", e.key, "a record was published for a call nobody asked",
                      pos)
            return
        status = e.status
        if status is _RUNNING or status is _AWAITING_APPROVAL:
            self._bad("A-ONE-RECORD", c, f"a tool_call_finished event with status "
                      f"{status.value}, which is no record", pos)
            return
        if c.published is not None:
            if status is not c.published:
                self._bad("A-ONE-RECORD", c,
                          f"the record changed from {c.published.value} to {status.value}",
                          c.published_pos, pos)
            elif c.published_epoch == self._epoch:
                self._bad("A-ONE-RECORD", c, f"the record {status.value} was published twice",
                          c.published_pos, pos)
            c.published_epoch = self._epoch
            return
        c.published = status
        c.published_pos = pos
        c.published_epoch = self._epoch
        if c.snap is not None and status is not c.snap:
            self._bad("A-ONE-RECORD", c,
                      f"the event says {status.value}, the snapshot showed {c.snap.value}",
                      c.snap_pos, pos)
            return
        if c.record is None:
            self._recorded(c, status, e.error, pos, e.at)

    def _recorded(self, c: _Call, status: ToolCallStatus, error: str, pos: int,
                  at: float) -> None:
        """The call's record, first seen: judge it against what happened to the call."""
        c.record = status
        c.record_pos = pos
        c.record_at = at
        c.record_error = error
        if DID_NOT_RUN_PREFIX in error and (c.handed or c.runs):
            self._bad("A-DID-NOT-RUN-TRUE", c,
                      f"recorded {status.value} saying the tool did not run, after "
                      f"{c.handed} hand-out(s) to a worker and {len(c.runs)} run(s) in "
                      "the ledger", c.first_hand, c.runs[0].pos if c.runs else -1, pos)
        if status is _SUCCEEDED and not c.returned:
            self._bad("A-SUCCEEDED-RETURNED", c,
                      "recorded succeeded, but no run of the tool returned a result",
                      c.pos, pos)
        elif status is _OUTCOME_UNKNOWN and not c.handed:
            self._bad("A-UNKNOWN-REACHED", c,
                      "recorded outcome_unknown, though no attempt was handed to a worker",
                      c.pos, pos)
        elif status is _REJECTED:
            self._judge_rejected(c, pos)
        if status in (_FAILED, _OUTCOME_UNKNOWN) and c.handed:
            self._judge_exhausted(c, status, pos)
        if c.single and c.runs:
            self._judge_orphans(c, status, pos)

    def _judge_rejected(self, c: _Call, pos: int) -> None:
        if c.approval not in (ApprovalState.REJECTED, ApprovalState.EXPIRED):
            self._bad("A-APPROVAL", c,
                      f"recorded rejected while its approval was {c.approval.value}: no "
                      "person rejected it and its deadline did not pass", c.pos,
                      c.approval_pos, pos)
        if c.handed:
            self._bad("A-APPROVAL", c, "recorded rejected after an attempt was handed out",
                      c.first_hand, pos)
        if not c.policy.requires_approval:
            self._bad("A-POLICY-SNAPSHOT", c,
                      "recorded rejected, but the policy in force when it was asked "
                      f"({_policy_text(c.policy)}) needs no approval", c.pos, pos)

    def _judge_exhausted(self, c: _Call, status: ToolCallStatus, pos: int) -> None:
        """A-EXHAUSTED-RECORD: what a reached call that ended for an infrastructure reason
        records (TC-REC-EXHAUST-READ, TC-REC-EXHAUST-OTHER, D-4, D-9)."""
        if c.result_ok is not None:
            return  # the tool's own answer decided the call (D-3)
        current = c.current
        cause = _LOST
        cause_pos = -1
        if current is not None and current.cause is not None:
            cause = current.cause
            cause_pos = current.cause_pos
        expected = _expected_record(c.policy, cause)
        if status is not expected:
            self._bad("A-EXHAUSTED-RECORD", c,
                      f"{_a(c.policy.effect.value)} call whose attempt {_CAUSE_TEXT[cause]} "
                      f"recorded {status.value}, not {expected.value}", c.pos, cause_pos, pos)
            self._followed_later(c, lambda p: _expected_record(p, cause) is status,
                                 f"it recorded {status.value}", pos)
            return
        attempts = len(c.attempts)
        limit = self.config.max_attempts
        if not c.single and self._queue_timers and attempts < limit:
            self._bad("A-EXHAUSTED-RECORD", c,
                      f"{_a(c.policy.effect.value)} call recorded {status.value} after "
                      f"{attempts} of its {limit} attempts", c.pos, pos)

    def _judge_orphans(self, c: _Call, status: ToolCallStatus, pos: int) -> None:
        """A-DOUBLE-RUN-SHAPE: a run still going when its single-attempt call is recorded is
        one the engine gave up on while it could still run (TC-AMO-3, D-8, D-12)."""
        for run in c.runs:
            if not run.live:
                continue
            run.orphan = True
            attempt = run.attempt
            cause = attempt.cause if attempt is not None else None
            restart = attempt is not None and attempt.epoch < self._epoch
            if (status is _FAILED and cause == _GAVE_UP) or (
                    status is _OUTCOME_UNKNOWN and restart):
                run.orphan_ok = True
                continue
            self._bad("A-DOUBLE-RUN-SHAPE", c,
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
                self._bad("E-RECONCILE-ONCE", c,
                          f"reconcile reported the call {c.reports} times", c.record_pos, pos)

    # -- attempts, as the executor handed them out ----------------------------------------------

    def _handed_out(self, e: h.HandedOut, pos: int) -> None:
        c = self._calls.get(e.call)
        if c is None:
            c = self._calls.get(e.key)
            if c is None:
                self._bad("A-SAME-KEY", e.key,
                          f"attempt {e.attempt} was handed out with a key no call has", pos)
                return
        if e.key != c.key:
            self._bad("A-SAME-KEY", c, f"attempt {e.attempt} passes the key {e.key!r}",
                      c.pos, pos)
        if not e.persisted_first:
            self._bad("A-DID-NOT-RUN-TRUE", c,
                      f"attempt {e.attempt} was told to {e.worker} before its hand-out was "
                      "persisted (D-5)", pos)
        if self.config.fence and c.single:
            self._fence(c, e.attempt, pos)
        attempt = c.attempts.get(e.attempt)
        if attempt is not None and attempt.worker is not None:
            earlier = attempt.worker
            again = "again" if earlier == e.worker else f"after {earlier}"
            self._bad("A-ONE-WORKER", c, f"attempt {e.attempt} was handed to {e.worker} {again}",
                      attempt.pos, pos)
        record = c.record
        if record is not None and record is not _OUTCOME_UNKNOWN:
            pid = "A-APPROVAL" if record is _REJECTED else "A-ONE-RECORD"
            self._bad(pid, c, f"attempt {e.attempt} was handed out after the record "
                      f"{record.value}", c.record_pos, pos)
        if c.result_ok is not None:
            self._bad("A-RETRY-CLASSES", c,
                      f"attempt {e.attempt} was handed out after the tool "
                      f"{'returned' if c.result_ok else 'reported a failure'} (D-3)",
                      c.result_pos, pos)
        if c.policy.requires_approval and c.approval is not _APPROVED:
            self._bad("A-APPROVAL", c,
                      f"attempt {e.attempt} was handed out while the call's approval was "
                      f"{c.approval.value}", c.pos, c.approval_pos, pos)
            if c.approval is _WAITING:
                self._bad("A-POLICY-SNAPSHOT", c,
                          "the call did not wait for approval, but the policy in force when "
                          f"it was asked ({_policy_text(c.policy)}) needs it", c.pos, pos)
        if c.policy.effect is _READ and c.lost_before:
            self.witnessed.add("S-READ-RETRY-AFTER-LOSS")
        if attempt is None:
            attempt = self._new_attempt(c, e.attempt, pos)
        attempt.worker = e.worker
        attempt.pos = pos
        attempt.epoch = self._epoch
        c.handed += 1
        if c.first_hand < 0:
            c.first_hand = pos
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
            self._attempt_ends(attempt, _GAVE_UP, pos)

    def _start_delivered(self, e: h.StartDelivered, pos: int) -> None:
        attempt = self._attempts.get(e.attempt)
        if attempt is not None:
            attempt.started = True

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
            self._attempt_ends(attempt, _LOST, pos)
            if not attempt.started and any(r.attempt is attempt for r in c.runs):
                self.witnessed.add("S-LOST-BEFORE-HEARTBEAT")

    def _server_restarted(self, e: h.ServerRestarted, pos: int) -> None:
        """D-8: every attempt out at a worker is lost to the restart; its run may go on. On an
        engine whose attempts survive a restart they go on into the new life instead."""
        self._epoch += 1
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
                    self._attempt_ends(attempt, _RESTART, pos)
        self._worker_attempts.clear()

    # -- ground truth: the ledger ------------------------------------------------------------------

    def _run_started(self, e: h.RunStarted, pos: int) -> None:
        c = self._calls.get(e.call) or self._calls.get(e.key)
        if c is None:
            self._bad("A-SAME-KEY", e.key, f"a run of {e.tool} passed a key no call has", pos)
            return
        attempt = c.attempts.get(e.attempt)
        if attempt is None or attempt.worker is None:
            self._bad("A-ONE-WORKER", c,
                      f"{e.worker} ran attempt {e.attempt}, which was never handed out", pos)
        for other in c.runs:
            if other.attempt is not None and other.attempt.id == e.attempt:
                self._bad("A-ONE-WORKER", c,
                          f"attempt {e.attempt} ran at {other.worker} and at {e.worker}",
                          other.pos, pos)
        record = c.record
        if record is not None:
            if DID_NOT_RUN_PREFIX in c.record_error:
                self._bad("A-DID-NOT-RUN-TRUE", c,
                          "the tool ran after the call recorded that it did not run",
                          c.record_pos, pos)
            elif record is _OUTCOME_UNKNOWN:
                self._bad("A-NO-ATTEMPT-AFTER-UNKNOWN", c,
                          f"attempt {e.attempt} ran after the call recorded outcome_unknown",
                          c.record_pos, pos)
            elif record is _REJECTED:
                self._bad("A-APPROVAL", c, "the tool ran after the call was rejected",
                          c.record_pos, pos)
            else:
                self._bad("A-ONE-RECORD", c,
                          f"the tool ran after the call recorded {record.value}",
                          c.record_pos, pos)
        if c.policy.requires_approval and c.approval is not _APPROVED:
            self._bad("A-APPROVAL", c, f"the tool ran while the call's approval was "
                      f"{c.approval.value}", c.pos, pos)
        run = _Run(c, e.worker, attempt, pos)
        self._runs[e.run] = run
        if c.single:
            self._overlaps(c, run, e.tool, pos)
        c.runs.append(run)

    def _overlaps(self, c: _Call, run: _Run, tool: str, pos: int) -> None:
        """A-DOUBLE-RUN-SHAPE, A-FENCE, S-DOUBLE-RUN: the runs of the same single-attempt tool
        still going when this one starts (TC-AMO-3, TC-AMO-4, D-6)."""
        live = self._live_single.setdefault(tool, [])
        for other in live:
            if other.call is c:
                self._bad("A-DOUBLE-RUN-SHAPE", c,
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
                self.witnessed.add("S-DOUBLE-RUN")
        live.append(run)

    def _fence(self, c: _Call, attempt: str, pos: int) -> None:
        """A-FENCE: with the fence on, an attempt of a single-attempt tool is handed out only
        when no run of the tool that the engine gave up on still goes (D-6). An attempt handed
        out earlier may overlap a run abandoned later: those are two calls running side by
        side, which the fence does not hold back."""
        for other in self._live_single.get(c.tool, ()):
            if other.orphan and other.call is not c:
                self._bad("A-FENCE", c,
                          f"with the fence on, attempt {attempt} was handed out while the "
                          f"abandoned run of {other.call.key} (recorded "
                          f"{_name(other.call.record)}) still went",
                          other.pos, other.call.record_pos, pos)
                return

    def _run_ended(self, e: h.RunEnded, pos: int) -> None:
        run = self._runs.get(e.run)
        if run is None or not run.live:
            return
        run.live = False
        c = run.call
        if e.end is _RUN_RETURNED:
            c.returned = True
        if c.single:
            live = self._live_single.get(c.tool)
            if live is not None and run in live:
                live.remove(run)


_CAUSE_TEXT = {
    _GAVE_UP: "was cancelled or timed out",
    _LOST: "was lost with its worker",
    _RESTART: "was lost at a server restart",
}


def _expected_record(policy: EffectivePolicy, cause: str) -> ToolCallStatus:
    """The record the spec gives a reached call out of attempts (records.decide)."""
    if policy.effect is _READ:
        return _FAILED
    if not policy.retries_allowed and cause == _GAVE_UP:
        return _FAILED
    return _OUTCOME_UNKNOWN


def _name(status: ToolCallStatus | None) -> str:
    return status.value if status is not None else "nothing"


def _ignore(entry: h.Entry, pos: int) -> None:
    return None


def _policy_text(p: EffectivePolicy) -> str:
    return f"{p.effect.value}, {'with' if p.requires_approval else 'without'} approval"


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"
