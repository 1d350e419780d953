"""The history checkers: every always- and eventually-property of `atmostonce.spec.properties`,
evaluated incrementally on a history (`atmostonce.check.history.entries`) and its effect ledger, and
`History`, the entries of one run judged as they arrive.

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
  failed if a read, outcome_unknown otherwise: an idempotent write, a single-attempt call whose
  worker was lost, and one cancelled or timed out (D-4), which only an engine declaring D-4's
  other choice (`ExecutorConfig.cancel_records_failed`) records failed; a retrying class gives
  up only after max_attempts attempts and never makes more (TC-REC-RETRY, D-9).
- A-RECORD-MEANING: a failed record saying the tool reported a failure follows a run that
  reported one; any other failed record after a hand-out is a read's, or, under D-4's other
  choice only, a cancelled single attempt's, whose write may land after it (F-7).
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
- A-TOOL-RESULT: a snapshot that shows the session history (`SnapshotSeen.results`) holds no
  tool result for a call without a record and exactly one for a recorded call: the text its
  record and error make, or for a succeeded call an output one of its runs returned (judged
  at quiescence against the ledger's outputs) (TC-REC-2).
- A-CANCEL-ON-TIMEOUT: an attempt whose run timeout fired while it was out at a worker (and
  still the call's current attempt) is named by a later `Cancelled` for that worker, judged
  at quiescence; a server restart in between excuses it, since the restart may
  have cut the batch that held the cancel (TC-AMO-3).
- A-FENCE: with the fence on, no attempt of a single-attempt tool is handed out while a run of
  the same tool that the engine gave up on still goes (D-6).
- A-HEARD-KEEPS-ATTEMPT: no attempt ends with its worker declared lost less than the heartbeat
  timeout after a heartbeat of that worker reached the executor (TC-REC-LOST, D-12).
- E-EVERY-CALL-RECORDED: at quiescence every call has a record (published or in a snapshot).
- E-RECONCILE-ONCE: user messages name each outcome_unknown call's key exactly once: twice is
  reported as soon as it happens, never only at quiescence (TC-RCN-ONCE).

Sometimes-properties are collected as witnesses (`witnessed`, complete after `finish`), for
statistics.

The judges are split by what they judge, each a class of its own module on the state of
`atmostonce.check.history.state`: `approvals` (policies, asks, answers), `attempts`
(timers, hand-outs, attempts given up on or lost), `records` (records and reconcile
reports), `runs` (the ledger's runs) and `heartbeats` (a worker's liveness);
`HistoryChecker` is all of them.

Using `History` from a harness::

    history = History(config)                 # config: the executor's ExecutorConfig
    history.append(CallAsked(at, key, ...))   # after each thing that happened; returns the
                                              # violations this entry revealed (always-props)
    ...
    history.finish()                          # once the run was driven to quiescence: adds the
                                              # eventually-properties' violations
    history.violations                        # every violation found, in order

Before `finish`, a harness drives the run to quiescence: no more faults, every worker back,
every timer fired, the reconcile job run (at least twice, to show a rerun sends nothing new),
and every session's snapshot read once more (`SnapshotSeen` for each call whose status,
error or tool results changed since the last look). `check_history(entries, config)` does
all of the checking for a finished list of entries. A `HistoryViolation` names its property id
(atmostonce.spec.properties), the call's idempotency key, a one-line message and the
positions of the entries involved. `HandedOut.call` and `RunStarted.call` are
the harness's own attribution of an attempt to a call (the simulator reads it from the call's
arguments); a harness that has none passes the key the executor sent, and a wrong key can then
only be caught when it names no call at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from atmostonce.check.history import entries as h
from atmostonce.check.history.approvals import ApprovalChecks
from atmostonce.check.history.attempts import AttemptChecks
from atmostonce.check.history.call_edges import CallEdges, call_edges
from atmostonce.check.history.heartbeats import HeartbeatChecks
from atmostonce.check.history.members import OUTCOME_UNKNOWN
from atmostonce.check.history.records import RecordChecks
from atmostonce.check.history.runs import RunChecks
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.properties import PropertyId, record_witness_id
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import Record
from atmostonce.spec.session import ToolCallStatus


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
    handed_at: float | None
    """When its first attempt was handed to a worker (the go-ahead), if one was."""
    approval_at: float | None
    """When its approval was answered or its deadline passed, if it waited for one."""
    error: str
    """Its record's error text."""


# The sometimes-property each (effect class, final status) witnesses.
_WITNESS: dict[tuple[EffectClass, ToolCallStatus], str] = {
    (e, s): record_witness_id(e, Record(s.value))
    for e in EffectClass for s in ToolCallStatus if s.final
}


class HistoryChecker(ApprovalChecks, AttemptChecks, RecordChecks, RunChecks, HeartbeatChecks):
    """Judges a history entry by entry; `violations` holds what it found, in order."""

    def __init__(self, config: ExecutorConfig, *, attempts_survive_restart: bool = False
                 ) -> None:
        super().__init__(config, attempts_survive_restart)
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
            h.HeartbeatDelivered: self._heartbeat_delivered,
            h.ResultDelivered: self._result_delivered,
            h.RecordPublished: self._record_published,
            h.SnapshotSeen: self._snapshot_seen,
            h.UserMessageSent: self._user_message,
            h.ReconcileRan: _ignore,
            h.RunStarted: self._run_started,
            h.EffectApplied: _ignore,
            h.RunEnded: self._run_ended,
            h.WorkerConnected: self._liveness_afresh,
            h.WorkerCrashed: _ignore,
            h.WorkerCut: _ignore,
            h.WorkerHealed: _ignore,
            h.WorkerDeclaredLost: self._declared_lost,
            h.ServerRestarted: self._restarted,
        }
        """The judge of each kind of entry: `observe` is the judge of the entry's kind and what
        it added to `violations`; `History.append` calls the judges directly."""

    def _declared_lost(self, e: h.WorkerDeclaredLost, pos: int) -> None:
        self._lost_while_heard(e, pos)
        self._worker_lost(e, pos)

    def _restarted(self, e: h.ServerRestarted, pos: int) -> None:
        self._forget_heard()
        self._server_restarted(e, pos)

    # -- entry points --------------------------------------------------------------------------

    def observe(self, entry: h.Entry, pos: int) -> list[h.HistoryViolation]:
        """Judge one entry at history position `pos`; return the violations it revealed."""
        self.judges[type(entry)](entry, pos)
        return self.take_fresh()

    def finish(self) -> list[h.HistoryViolation]:
        """The eventually-properties, at quiescence; also returns what they found."""
        self._cancels_never_sent()
        self.finished_results()
        for c in self._calls.values():
            if c.record is not None:
                self.witnessed.add(_WITNESS[c.policy.effect, c.record])
            if c.record is None:
                self._bad(PropertyId.E_EVERY_CALL_RECORDED, c, "the call never got a record", c.pos)
                continue
            if c.record is OUTCOME_UNKNOWN:
                if c.reports == 0:
                    self._bad(PropertyId.E_RECONCILE_ONCE, c,
                              "no reconcile report ever named this outcome_unknown call",
                              c.pos, c.record_pos)
                if not c.runs:
                    self.witnessed.add(PropertyId.S_UNKNOWN_NEVER_RAN)
        return self.take_fresh()

    def call_edges(self) -> CallEdges:
        """The call machines' edges this history took (`atmostonce.check.history.call_edges`)."""
        return call_edges(self._calls.values())

    def summaries(self) -> Iterator[CallSummary]:
        for c in self._calls.values():
            status = c.record
            yield CallSummary(c.key, c.tool, c.policy.effect, status, c.asked_at,
                              c.record_at if status is not None else None,
                              len(c.attempts), c.handed, len(c.runs), c.first_hand_at,
                              c.approval_at, c.record_error)


def _ignore(entry: h.Entry, pos: int) -> None:
    return None


class History:
    """The entries of one run, checked as they arrive (see the module docstring)."""

    __slots__ = ("_fresh", "_judges", "checker", "entries", "judged")

    def __init__(self, config: ExecutorConfig, *, attempts_survive_restart: bool = False
                 ) -> None:
        """`attempts_survive_restart`: the engine keeps the attempts out at a server restart
        (`atmostonce.engines.adapter.Limits`), so a restart does not end them (D-8)."""
        self.entries: list[h.Entry] = []
        self.judged = 0
        """How many entries `judge` took: the position of its next one."""
        self.checker = HistoryChecker(config, attempts_survive_restart=attempts_survive_restart)
        self._judges = self.checker.judges
        self._fresh = self.checker.fresh

    def append(self, entry: h.Entry) -> list[h.HistoryViolation]:
        """Add `entry`; return the violations it revealed (usually none). The checker's
        `observe`, inlined: a run appends about ten entries per tool call."""
        entries = self.entries
        pos = len(entries)
        entries.append(entry)
        self._judges[type(entry)](entry, pos)
        return self.checker.take_fresh() if self._fresh else _NONE

    def judge(self, entry: h.Entry) -> list[h.HistoryViolation]:
        """Judge `entry` as `append` would, without keeping it: for a harness that never reads
        its entries back, so they need not stay in memory. A history takes its entries through
        one of the two, never both."""
        pos = self.judged
        self.judged = pos + 1
        self._judges[type(entry)](entry, pos)
        return self.checker.take_fresh() if self._fresh else _NONE

    def finish(self) -> list[h.HistoryViolation]:
        """The run reached quiescence: check the eventually-properties."""
        return self.checker.finish()

    @property
    def violations(self) -> list[h.HistoryViolation]:
        return self.checker.violations


_NONE: list[h.HistoryViolation] = []
"""What `append` returns when an entry revealed nothing; never changed."""


def check_history(entries: Iterable[h.Entry], config: ExecutorConfig) -> list[h.HistoryViolation]:
    """Every violation in a finished history, always- and eventually-properties alike."""
    history = History(config)
    for entry in entries:
        history.append(entry)
    history.finish()
    return history.violations
