"""The rules about attempts and records: an attempt queued, handed out past the fence, timed out,
cancelled or ended, what follows its end by the call's kept policy, and the call's one record
(TC-AMO-1, TC-AMO-3, TC-KEY-1, TC-REC-1, TC-REC-2, D-3, D-4, D-5, D-6, D-9, D-10).
"""

from __future__ import annotations

from atmostonce.executor import journal
from atmostonce.executor.members import (
    BACKOFF,
    BACKOFF_ID,
    CANCELLED,
    NOT_REACHED,
    QUEUE,
    QUEUE_ID,
    QUEUED,
    RUN,
    RUN_ID,
    STATUS_OF_RECORD,
)
from atmostonce.executor.policies import PolicyRules
from atmostonce.executor.recovery import after_end
from atmostonce.executor.state import Attempt, Call, Worker
from atmostonce.executor.views import tool_message
from atmostonce.spec.fence import fence_blocks
from atmostonce.spec.protocol import (
    Cancel,
    Command,
    GoAhead,
    Persist,
    Publish,
    StartTimer,
    StopTimer,
)
from atmostonce.spec.records import AttemptEnd, Decision, Outcome, decide
from atmostonce.spec.session import ToolCallFinished


class AttemptRules(PolicyRules):
    """Attempts and records (TC-AMO-1, TC-AMO-3, TC-REC-1, D-5, D-6)."""

    _decisions: dict[tuple[str, str, int, int, bool], Decision]
    """`decide`'s answers by the values of its arguments: it is pure, and asked once per
    attempt."""

    def queue_attempt(self, call: Call, at: float, out: list[Command]) -> None:
        """Queue the call's next attempt; it never reached a worker until it is handed out."""
        attempt = self.state.new_attempt(call, at)
        out.append(Persist(journal.queued_entry(at, attempt)))
        out.append(StartTimer(QUEUE_ID + attempt.id, self.config.queue_timeout, QUEUE,
                              attempt.id, call.key))

    def next_attempt(self) -> Attempt | None:
        """The oldest queued attempt the fence lets go (D-6)."""
        queue = self.state.queue
        if not queue:
            return None
        if not self.config.fence or not self.state.abandoned_of_tool:
            return next(iter(queue.values()))
        for attempt in queue.values():
            if not self.fenced(attempt):
                return attempt
        return None

    def fenced(self, attempt: Attempt) -> bool:
        """Whether the attempt waits because a run of its tool the executor gave up on may still
        be going (D-6, TC-AMO-4)."""
        call = attempt.call
        return fence_blocks(self.config.fence, self.policy_of(call).effect,
                            self.state.abandoned_of_tool.get(call.tool, 0))

    def key_for(self, attempt: Attempt) -> str:
        """The idempotency key the attempt passes: the call's, the same for every attempt
        (TC-KEY-1)."""
        return attempt.call.key

    def hand_out_commands(self, persist: Persist, go: GoAhead) -> list[Command]:
        """The hand-out is durable before the go-ahead, so a tool never runs while the journal
        says its attempt never reached a worker (D-5)."""
        return [persist, go]

    def hand_out(self, worker: Worker, attempt: Attempt, at: float, out: list[Command]) -> None:
        """Hand the attempt to this worker and to no other, ever (TC-AMO-1, D-5). The run
        timeout starts with the go-ahead, since the tool may start before `Started` arrives
        (TC-REC-LOST), and starts again at `Started`."""
        self.state.hand(attempt, worker.name, at)
        call = attempt.call
        out.append(StopTimer(QUEUE_ID + attempt.id))
        persist = Persist(journal.handed_entry(at, attempt, worker.name))
        go = GoAhead(worker.name, attempt.id, self.key_for(attempt), call.tool, call.arguments,
                     self.config.lease)
        out.extend(self.hand_out_commands(persist, go))
        out.append(self.run_timer(attempt))

    def run_timer(self, attempt: Attempt) -> StartTimer:
        timer = attempt.run_timer
        if timer is None:
            timer = StartTimer(RUN_ID + attempt.id, self.config.run_timeout, RUN, attempt.id,
                               attempt.call.key)
            attempt.run_timer = timer
        return timer

    def on_queue_timeout(self, attempt_id: str, at: float) -> list[Command]:
        """No worker took the attempt in time: it never reached one (TC-REC-NOTRUN, D-10)."""
        attempt = self.state.live.get(attempt_id)
        if attempt is None or attempt.phase is not QUEUED:
            return []
        out: list[Command] = []
        self.end_attempt(attempt, NOT_REACHED, at, out)
        return out

    def on_run_timeout(self, attempt_id: str, at: float) -> list[Command]:
        """The attempt ran too long: cancel it, cooperatively, so its run may go on; for a
        single-attempt call remember that run (TC-AMO-3, D-4, D-9)."""
        attempt = self.state.live.get(attempt_id)
        if attempt is None or attempt.phase is QUEUED or attempt.worker is None:
            return []
        out: list[Command] = [Cancel(attempt.worker, attempt.id)]
        self.end_attempt(attempt, CANCELLED, at, out,
                         may_go_on=self.single(attempt.call))
        return out

    def on_retry_backoff(self, key: str, at: float) -> list[Command]:
        """The backoff is over: queue the next attempt (TC-REC-RETRY)."""
        call = self.state.calls.get(key)
        if call is None or not call.backoff or call.outcome is not None:
            return []
        out: list[Command] = []
        self.queue_attempt(call, at, out)
        return out

    def decision(self, call: Call, end: AttemptEnd) -> Decision:
        """What follows the end of the call's current attempt, by the spec's rule for its kept
        policy (TC-POL-2, TC-REC-RETRY, TC-REC-NOTRUN, TC-REC-EXHAUST-READ,
        TC-REC-EXHAUST-OTHER, D-3, D-4, D-9, D-10)."""
        policy = self.policy_of(call)
        limit = self.max_attempts(policy)
        slot = (policy.effect._value_, end._value_, call.attempts_made, limit, call.reached)
        found = self._decisions.get(slot)
        if found is None:
            found = decide(policy.effect, end, call.attempts_made, limit, call.reached,
                           self.config.cancel_records_failed)
            self._decisions[slot] = found
        return found

    def end_attempt(self, attempt: Attempt, end: AttemptEnd, at: float, out: list[Command],
                    output: str = "", may_go_on: bool = False) -> None:
        """The attempt ended with `end`: durably, then another attempt after the backoff or the
        call's record. `may_go_on` remembers a run that may still be going (TC-AMO-3)."""
        was_out = attempt.phase is not QUEUED
        self.state.end(attempt, end, at)
        if was_out and end is not CANCELLED:
            out.append(StopTimer(RUN_ID + attempt.id))
        if may_go_on:
            self.state.abandon(attempt)
        call = attempt.call
        out.append(Persist(journal.ended_entry(at, attempt, end, may_go_on, output)))
        outcome = after_end(call, end, self.decision(call, end), output)
        if outcome is None:
            out.append(StartTimer(BACKOFF_ID + call.key, self.config.retry_backoff,
                                  BACKOFF, call.key, call.key))
        else:
            self.finalize(call, outcome, output, at, out)

    def finalize(self, call: Call, outcome: Outcome, output: str, at: float,
                 out: list[Command]) -> None:
        """Write the call's one record, publish it and tell the model; a record is written once
        and never changes (TC-REC-1, TC-REC-2, TC-RCN-FIND)."""
        if call.outcome is not None:
            return
        call.outcome, call.output, call.pending = outcome, output, None
        out.append(Persist(journal.record_entry(at, call.key, outcome, output)))
        out.append(Publish(ToolCallFinished(call.session.session_id, call.turn_id,
                                            call.tool_call_id,
                                            STATUS_OF_RECORD[outcome.record._value_],
                                            outcome.error)))
        call.session.messages.append(tool_message(call, outcome, output))
