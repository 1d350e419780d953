"""Deliberately broken executors: each overrides one small method of the reference executor,
breaks one clause, and names the property that must catch it.

Each is a factory with the `ExecutorFactory` signature, so `atmostonce verify --executor
atmostonce.executor.mutants:NAME` checks it like any engine; a checking layer that passes one of
these is broken.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from atmostonce.executor import journal
from atmostonce.executor.core import ReferenceExecutor
from atmostonce.executor.state import Attempt, Call, Session
from atmostonce.executor.timers import timer_id
from atmostonce.executor.views import tool_message
from atmostonce.spec.approval import ApprovalEvent, ApprovalReply, ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectivePolicy
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import (
    Cancel,
    Command,
    Executor,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    GoAhead,
    Heartbeat,
    Persist,
    Publish,
    StartTimer,
    TimerKind,
)
from atmostonce.spec.records import (
    DID_NOT_RUN_PREFIX,
    AttemptEnd,
    Decision,
    FailureKind,
    Outcome,
    Record,
    decide,
    failure_text,
)
from atmostonce.spec.session import ToolCallFinished, ToolCallStatus


@dataclass(frozen=True)
class ExecutorMutant:
    """A broken executor: which clause it breaks, what it does, and which property must
    catch it."""

    name: str
    factory: ExecutorFactory
    clause: str
    summary: str
    expect: str

    @property
    def path(self) -> str:
        """The `module:function` path `atmostonce verify --executor` takes."""
        return f"{__name__}:{self.name}"


class _RetryNonIdempotent(ReferenceExecutor):
    def decision(self, call: Call, end: AttemptEnd) -> Decision:
        if end is AttemptEnd.WORKER_LOST and self.single(call) and call.attempts_made == 1:
            return Decision(True, None, None)
        return super().decision(call, end)


class _SecondWorker(ReferenceExecutor):
    def lose_attempt(self, attempt: Attempt, at: float, out: list[Command],
                     may_go_on: bool) -> None:
        self.state.requeue(attempt)


class _DidNotRunAfterReach(ReferenceExecutor):
    def decision(self, call: Call, end: AttemptEnd) -> Decision:
        if end is AttemptEnd.WORKER_LOST:
            policy = self.policy_of(call)
            return decide(policy.effect, AttemptEnd.NOT_REACHED, call.attempts_made,
                          self.max_attempts(policy), False)
        return super().decision(call, end)


class _ApprovalDefaultIgnored(ReferenceExecutor):
    def resolve(self, tool: str, session: Session) -> EffectivePolicy:
        policy = super().resolve(tool, session)
        registered = self.state.policies.get(tool)
        explicit = registered is not None and registered.policy is not None and \
            registered.policy.requires_approval is True
        return replace(policy, requires_approval=explicit)


class _PolicyChangeAppliesToAskedCalls(ReferenceExecutor):
    def policy_of(self, call: Call) -> EffectivePolicy:
        return self.resolve(call.tool, call.session)


class _RecordOverwritten(ReferenceExecutor):
    def late_finished(self, event: Finished, out: list[Command]) -> None:
        super().late_finished(event, out)
        call = self.state.calls.get(event.attempt.rpartition("#")[0])
        if call is None or not event.ok or call.outcome is None or \
                call.outcome.record not in (Record.FAILED, Record.OUTCOME_UNKNOWN):
            return
        call.outcome, call.output = Outcome(Record.SUCCEEDED, ""), event.output
        out.append(Persist(journal.record_entry(event.at, call.key, call.outcome,
                                                event.output)))
        out.append(Publish(ToolCallFinished(call.session.session_id, call.turn_id,
                                            call.tool_call_id, ToolCallStatus.SUCCEEDED)))
        call.session.messages.append(tool_message(call, call.outcome, event.output))


class _NewKeyOnRetry(ReferenceExecutor):
    def key_for(self, attempt: Attempt) -> str:
        key = super().key_for(attempt)
        return key if attempt.number == 1 else f"{key}-retry-{attempt.number}"


class _FenceIgnored(ReferenceExecutor):
    def fenced(self, attempt: Attempt) -> bool:
        return False


class _GoAheadBeforePersist(ReferenceExecutor):
    def hand_out_commands(self, persist: Persist, go: GoAhead) -> list[Command]:
        return [go, persist]


class _RetryAfterUnknown(ReferenceExecutor):
    def finalize(self, call: Call, outcome: Outcome, output: str, at: float,
                 out: list[Command]) -> None:
        recorded = call.outcome is not None
        super().finalize(call, outcome, output, at, out)
        if not recorded and outcome.record is Record.OUTCOME_UNKNOWN:
            self.queue_attempt(call, at, out)


class _CancelSaysDidNotRun(ReferenceExecutor):
    def decision(self, call: Call, end: AttemptEnd) -> Decision:
        if end is AttemptEnd.CANCELLED and self.single(call):
            return Decision(False, Record.FAILED, FailureKind.DID_NOT_RUN)
        return super().decision(call, end)


def _cancel_decided_as(executor: ReferenceExecutor, call: Call, fails: bool) -> Decision:
    """A cancelled single attempt decided by a fixed choice of D-4, whatever is declared."""
    policy = executor.policy_of(call)
    return decide(policy.effect, AttemptEnd.CANCELLED, call.attempts_made,
                  executor.max_attempts(policy), call.reached, fails)


class _CancelRecordsFailedUndeclared(ReferenceExecutor):
    def decision(self, call: Call, end: AttemptEnd) -> Decision:
        if end is AttemptEnd.CANCELLED and self.single(call):
            return _cancel_decided_as(self, call, True)
        return super().decision(call, end)


class _CancelRecordsFailedIgnored(ReferenceExecutor):
    def decision(self, call: Call, end: AttemptEnd) -> Decision:
        if end is AttemptEnd.CANCELLED and self.single(call):
            return _cancel_decided_as(self, call, False)
        return super().decision(call, end)


class _TimeoutWithoutCancel(ReferenceExecutor):
    def on_run_timeout(self, attempt_id: str, at: float) -> list[Command]:
        return [c for c in super().on_run_timeout(attempt_id, at) if not isinstance(c, Cancel)]


class _ApproveAfterDeadline(ReferenceExecutor):
    def approval_answer(self, state: ApprovalState,
                        event: ApprovalEvent) -> tuple[ApprovalState, ApprovalReply]:
        if state is ApprovalState.EXPIRED and event is ApprovalEvent.APPROVE:
            return ApprovalState.APPROVED, ApprovalReply.ACCEPTED
        return super().approval_answer(state, event)


class _RestartRequeuesHanded(ReferenceExecutor):
    def recover_handed(self, attempt: Attempt, at: float, out: list[Command]) -> None:
        self.state.requeue(attempt)
        out.append(StartTimer(timer_id(TimerKind.QUEUE_TIMEOUT, attempt.id),
                              self.config.queue_timeout, TimerKind.QUEUE_TIMEOUT, attempt.id,
                              attempt.call.key))


class _ToolResultWithoutError(ReferenceExecutor):
    def finalize(self, call: Call, outcome: Outcome, output: str, at: float,
                 out: list[Command]) -> None:
        new = call.outcome is None
        super().finalize(call, outcome, output, at, out)
        if new and outcome.error:
            call.session.messages[-1] = tool_message(call, replace(outcome, error=""), output)

class _HeartbeatNotHeard(ReferenceExecutor):
    def on_heartbeat(self, event: Heartbeat) -> list[Command]:
        return []


class _OneAttemptTooMany(ReferenceExecutor):
    def max_attempts(self, policy: EffectivePolicy) -> int:
        kept = super().max_attempts(policy)
        return kept + 1 if kept > 1 else kept

class _AttemptsCappedAtTwo(ReferenceExecutor):
    def max_attempts(self, policy: EffectivePolicy) -> int:
        return min(super().max_attempts(policy), 2)


class _AskDeadlineIgnored(ReferenceExecutor):
    def ask_deadline(self, tool: str, asked: float | None) -> float:
        return super().ask_deadline(tool, None)


def retry_non_idempotent(config: ExecutorConfig) -> Executor:
    """A single-attempt call whose worker was lost gets a second attempt (TC-EFF-NONIDEM)."""
    return _RetryNonIdempotent(config)


def second_worker(config: ExecutorConfig) -> Executor:
    """An attempt whose worker was lost is queued again and handed, under the same attempt
    id, to another worker (TC-AMO-1)."""
    return _SecondWorker(config)


def did_not_run_after_reach(config: ExecutorConfig) -> Executor:
    """An attempt lost after its hand-out is decided as if it never reached a worker
    (TC-REC-NOTRUN, D-5)."""
    return _DidNotRunAfterReach(config)


def approval_default_ignored(config: ExecutorConfig) -> Executor:
    """Only an explicit requires_approval=true makes a call wait; the class default is
    ignored (TC-APR-2)."""
    return _ApprovalDefaultIgnored(config)


def policy_change_applies_to_asked_calls(config: ExecutorConfig) -> Executor:
    """Decisions read the tool's current policy instead of the one kept at ask time
    (TC-SNAP-1)."""
    return _PolicyChangeAppliesToAskedCalls(config)


def record_overwritten(config: ExecutorConfig) -> Executor:
    """A successful result arriving after a failed or unknown record replaces it and is
    published again (TC-REC-1)."""
    return _RecordOverwritten(config)


def new_key_on_retry(config: ExecutorConfig) -> Executor:
    """The go-ahead of a second or later attempt carries a different idempotency key
    (TC-KEY-1)."""
    return _NewKeyOnRetry(config)


def fence_ignored(config: ExecutorConfig) -> Executor:
    """The fence is never consulted, even when the option is on (D-6)."""
    return _FenceIgnored(config)


def go_ahead_before_persist(config: ExecutorConfig) -> Executor:
    """The go-ahead is sent before the hand-out is persisted (D-5)."""
    return _GoAheadBeforePersist(config)


def retry_after_unknown(config: ExecutorConfig) -> Executor:
    """A call recorded outcome_unknown is queued for another attempt (TC-RCN-1)."""
    return _RetryAfterUnknown(config)


def cancel_says_did_not_run(config: ExecutorConfig) -> Executor:
    """A cancelled single-attempt call records the 'did not run, safe to call again'
    wording (D-4)."""
    return _CancelSaysDidNotRun(config)


def cancel_records_failed_undeclared(config: ExecutorConfig) -> Executor:
    """A cancelled single-attempt call records failed 'may still be running' though the
    executor declares D-4's default, outcome_unknown: the old answer, kept without saying so
    (D-4, F-7)."""
    return _CancelRecordsFailedUndeclared(config)


def cancel_records_failed_ignored(config: ExecutorConfig) -> Executor:
    """The option `cancel_records_failed` is ignored: a cancelled single-attempt call records
    outcome_unknown though the executor declares D-4's other choice (D-4)."""
    return _CancelRecordsFailedIgnored(config)


def timeout_without_cancel(config: ExecutorConfig) -> Executor:
    """A run timeout ends the attempt and records its call, but the worker running it is never
    told to stop (TC-AMO-3)."""
    return _TimeoutWithoutCancel(config)


def approve_after_deadline(config: ExecutorConfig) -> Executor:
    """An approval arriving after the deadline rejected the call is accepted and the call
    runs (D-7)."""
    return _ApproveAfterDeadline(config)


def restart_requeues_handed(config: ExecutorConfig) -> Executor:
    """After a restart, attempts that were out at a worker are queued again as if they had
    never been handed out (D-8)."""
    return _RestartRequeuesHanded(config)


def tool_result_without_error(config: ExecutorConfig) -> Executor:
    """A call that did not succeed reaches the model with its record but not its error: the
    tool result says `failed:` or `outcome_unknown` without why (TC-REC-2)."""
    return _ToolResultWithoutError(config)


def heartbeat_not_heard(config: ExecutorConfig) -> Executor:
    """A heartbeat does not renew its worker's liveness: a worker whose tool runs longer than
    the heartbeat timeout is declared lost while it heartbeats (TC-REC-LOST, D-12)."""
    return _HeartbeatNotHeard(config)


class _DidNotRunWordingDropped(ReferenceExecutor):
    def finalize(self, call: Call, outcome: Outcome, output: str, at: float,
                 out: list[Command]) -> None:
        if outcome.failure is FailureKind.DID_NOT_RUN:
            outcome = replace(outcome, error=outcome.error.removeprefix(DID_NOT_RUN_PREFIX + ": "))
        super().finalize(call, outcome, output, at, out)


class _ToolFailureDropped(ReferenceExecutor):
    def finalize(self, call: Call, outcome: Outcome, output: str, at: float,
                 out: list[Command]) -> None:
        if outcome.failure is FailureKind.TOOL_ERROR:
            outcome = replace(outcome, error=failure_text(FailureKind.TOOL_ERROR))
        super().finalize(call, outcome, output, at, out)


class _DeadlineAfreshAtRestart(ReferenceExecutor):
    def resume(self, call: Call, at: float, out: list[Command]) -> None:
        if call.approval is ApprovalState.WAITING:
            call.approval_deadline = at - call.asked_at + self.deadline_of(call)
        super().resume(call, at, out)


def did_not_run_wording_dropped(config: ExecutorConfig) -> Executor:
    """A call none of whose attempts reached a worker records failed without the page's
    did-not-run opening, alike in its snapshot, its event and its tool result (TC-REC-NOTRUN):
    no copy disagrees with another, only with the page."""
    return _DidNotRunWordingDropped(config)


def tool_failure_dropped(config: ExecutorConfig) -> Executor:
    """A call the tool's own failure decided records failed without that failure, alike in
    every copy (D-3): the model never reads what went wrong."""
    return _ToolFailureDropped(config)


def deadline_afresh_at_restart(config: ExecutorConfig) -> Executor:
    """After a restart a call still waiting for approval gets its whole deadline again, from
    the restart, instead of what was left of the one it kept at ask time (D-32): an approval
    can then be accepted after the kept deadline, the executor's own timer not yet fired."""
    return _DeadlineAfreshAtRestart(config)


def one_attempt_too_many(config: ExecutorConfig) -> Executor:
    """A read or an idempotent write is tried once more than max_attempts allows before it is
    given up on (TC-REC-RETRY, D-9)."""
    return _OneAttemptTooMany(config)


def ask_deadline_ignored(config: ExecutorConfig) -> Executor:
    """A call whose ask sets its own approval deadline keeps its tool policy's or the
    executor's instead (D-32)."""
    return _AskDeadlineIgnored(config)


def attempts_capped_at_two(config: ExecutorConfig) -> Executor:
    """A read or an idempotent write is given up on after two attempts whatever max_attempts
    says: a retry cap written as a constant (TC-REC-RETRY). Every schedule within the
    exhaustive depth (two attempts) passes it; the deep lockstep and the probe of a
    long-retried call catch it."""
    return _AttemptsCappedAtTwo(config)


_MUTANTS: tuple[ExecutorMutant, ...] = (
    ExecutorMutant("retry_non_idempotent", retry_non_idempotent, "TC-EFF-NONIDEM",
                   "a single-attempt call whose worker was lost gets a second attempt",
                   PropertyId.A_ONE_ATTEMPT),
    ExecutorMutant("second_worker", second_worker, "TC-AMO-1",
                   "a lost attempt is handed again, under the same id, to another worker",
                   PropertyId.A_ONE_WORKER),
    ExecutorMutant("did_not_run_after_reach", did_not_run_after_reach, "TC-REC-NOTRUN",
                   "an attempt lost after its hand-out is decided as never reached",
                   PropertyId.A_DID_NOT_RUN_TRUE),
    ExecutorMutant("approval_default_ignored", approval_default_ignored, "TC-APR-2",
                   "only an explicit requires_approval=true makes a call wait",
                   PropertyId.A_APPROVAL),
    ExecutorMutant("policy_change_applies_to_asked_calls",
                   policy_change_applies_to_asked_calls, "TC-SNAP-1",
                   "decisions read the tool's current policy, not the one kept at ask time",
                   PropertyId.A_ONE_ATTEMPT),
    ExecutorMutant("record_overwritten", record_overwritten, "TC-REC-1",
                   "a late successful result replaces a failed or unknown record",
                   PropertyId.A_ONE_RECORD),
    ExecutorMutant("new_key_on_retry", new_key_on_retry, "TC-KEY-1",
                   "a retry's go-ahead carries a different idempotency key", PropertyId.A_SAME_KEY),
    ExecutorMutant("fence_ignored", fence_ignored, "D-6",
                   "with the fence on, a new call of the tool starts while an abandoned run "
                   "may still go on", PropertyId.A_FENCE),
    ExecutorMutant("go_ahead_before_persist", go_ahead_before_persist, "D-5",
                   "the go-ahead is sent before the hand-out is durable",
                   PropertyId.A_DID_NOT_RUN_TRUE),
    ExecutorMutant("retry_after_unknown", retry_after_unknown, "TC-RCN-1",
                   "a call recorded outcome_unknown gets another attempt",
                   PropertyId.A_NO_ATTEMPT_AFTER_UNKNOWN),
    ExecutorMutant("cancel_says_did_not_run", cancel_says_did_not_run, "D-4",
                   "a cancelled single-attempt call is recorded as never run",
                   PropertyId.A_DID_NOT_RUN_TRUE),
    ExecutorMutant("cancel_records_failed_undeclared", cancel_records_failed_undeclared, "D-4",
                   "a cancelled single-attempt call records failed, 'may still be running', "
                   "though the executor declares D-4's default, outcome_unknown",
                   PropertyId.A_EXHAUSTED_RECORD),
    ExecutorMutant("cancel_records_failed_ignored", cancel_records_failed_ignored, "D-4",
                   "declaring D-4's other choice, a cancelled single-attempt call still "
                   "records outcome_unknown", PropertyId.A_EXHAUSTED_RECORD),
    ExecutorMutant("timeout_without_cancel", timeout_without_cancel, "TC-AMO-3",
                   "a timed-out attempt is given up on without telling its worker to stop",
                   PropertyId.A_CANCEL_ON_TIMEOUT),
    ExecutorMutant("approve_after_deadline", approve_after_deadline, "D-7",
                   "an approval after the deadline is accepted and the call runs",
                   PropertyId.A_APPROVAL),
    ExecutorMutant("restart_requeues_handed", restart_requeues_handed, "D-8",
                   "after a restart an attempt that was out at a worker is handed out again",
                   PropertyId.A_ONE_WORKER),
    ExecutorMutant("tool_result_without_error", tool_result_without_error, "TC-REC-2",
                   "the tool result of a call that did not succeed leaves out its error",
                   PropertyId.A_TOOL_RESULT),
    ExecutorMutant("one_attempt_too_many", one_attempt_too_many, "TC-REC-RETRY",
                   "a read or an idempotent write gets one attempt more than max_attempts",
                   PropertyId.A_EXHAUSTED_RECORD),
    ExecutorMutant("did_not_run_wording_dropped", did_not_run_wording_dropped, "TC-REC-NOTRUN",
                   "a call that never reached a worker records failed without the did-not-run "
                   "opening, alike in every copy", PropertyId.A_RECORD_MEANING),
    ExecutorMutant("tool_failure_dropped", tool_failure_dropped, "D-3",
                   "a call the tool's own failure decided records failed without that failure, "
                   "alike in every copy", PropertyId.A_RECORD_MEANING),
    ExecutorMutant("deadline_afresh_at_restart", deadline_afresh_at_restart, "D-32",
                   "a restart gives a waiting call its whole approval deadline again",
                   PropertyId.A_APPROVAL),
    ExecutorMutant("heartbeat_not_heard", heartbeat_not_heard, "TC-REC-LOST",
                   "a heartbeat does not renew its worker's liveness, so a worker still "
                   "heartbeating is declared lost", PropertyId.A_HEARD_KEEPS_ATTEMPT),
    ExecutorMutant("ask_deadline_ignored", ask_deadline_ignored, "D-32",
                   "a call keeps its tool's or the executor's approval deadline, not the one "
                   "its ask set", PropertyId.A_APPROVAL),
    ExecutorMutant("attempts_capped_at_two", attempts_capped_at_two, "TC-REC-RETRY",
                   "a read or an idempotent write is given up on after two attempts when "
                   "max_attempts allows more", PropertyId.A_EXHAUSTED_RECORD),
)

EXECUTOR_MUTANTS: dict[str, ExecutorMutant] = {m.name: m for m in _MUTANTS}


def get(name: str) -> ExecutorMutant:
    """The executor mutant called `name`; SpecError naming the known ones otherwise."""
    mutant = EXECUTOR_MUTANTS.get(name)
    if mutant is None:
        known = ", ".join(EXECUTOR_MUTANTS)
        raise SpecError(f"unknown executor mutant {name!r} (known: {known})")
    return mutant
