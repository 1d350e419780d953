"""Rebuilding the executor's tables from its journal: a pure fold, one fact at a time (D-8).

The fold restores what the journal says happened and decides nothing new: what a restart does
with attempts that were out at a worker is `restart.RestartRules.recover`'s job. Entries that
are malformed, or that name a session, call or attempt no earlier entry created, raise a one-line
SpecError naming the entry. Judging whether the journal followed the rules is the checkers' job,
so a fold never refuses a well-formed fact for breaking one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from atmostonce.executor import facts, reader
from atmostonce.executor.state import (
    ENDS_FROM,
    Attempt,
    Call,
    ExecutorState,
    Phase,
    Registered,
    Session,
)
from atmostonce.executor.views import tool_message
from atmostonce.spec.approval import initial_approval
from atmostonce.spec.errors import SpecError
from atmostonce.spec.records import (
    AttemptEnd,
    Decision,
    Outcome,
    Record,
    record_of,
    unknown_detail,
)
from atmostonce.spec.session import Message, MessageRole

Decide = Callable[[Call, AttemptEnd], Decision]


def failure_detail(end: AttemptEnd, output: str, decision: Decision | None = None) -> str:
    """The detail of a record's error: the tool's own failure goes to the model (D-3); an
    outcome_unknown record says how its last attempt ended and its progress (D-30)."""
    if end is AttemptEnd.TOOL_FAILED:
        return output
    if decision is not None and decision.record is Record.OUTCOME_UNKNOWN:
        return unknown_detail(end)
    return ""


def after_end(call: Call, end: AttemptEnd, decision: Decision, output: str) -> Outcome | None:
    """Note that an attempt of `call` ended, and return the record the decision asks for, or
    None when another attempt follows the backoff (TC-REC-RETRY, D-9)."""
    call.reached = call.reached or end.reached_worker
    if decision.retry:
        call.backoff = True
        return None
    return record_of(decision, failure_detail(end, output, decision))


class _Fold:
    """Applies the facts of a journal to `state`, in order."""

    def __init__(self, state: ExecutorState, decide: Decide) -> None:
        self.state = state
        self.decide = decide
        self.index = 0
        self._folds: dict[type, Callable[[Any], None]] = {
            facts.PolicySet: self.policy_set,
            facts.SessionOpened: self.session_opened,
            facts.Asked: self.asked,
            facts.Answered: self.answered,
            facts.Queued: self.queued,
            facts.Handed: self.handed,
            facts.Ended: self.ended,
            facts.Recorded: self.recorded,
            facts.UserMessageAdded: self.user_message,
            facts.RunOver: self.run_over,
            facts.WorkerLost: self.worker_lost,
        }

    def fail(self, problem: str) -> NoReturn:
        raise SpecError(f"journal entry {self.index}: {problem}")

    def session(self, session_id: str) -> Session:
        session = self.state.sessions.get(session_id)
        if session is None:
            self.fail(f"session {session_id!r} was never opened")
        return session

    def call(self, key: str) -> Call:
        call = self.state.calls.get(key)
        if call is None:
            self.fail(f"no call with key {key!r} was asked")
        return call

    def live(self, attempt: str) -> Attempt:
        found = self.state.live.get(attempt)
        if found is None:
            self.fail(f"attempt {attempt!r} was never queued or has already ended")
        return found

    def apply(self, index: int, fact: facts.Fact) -> None:
        self.index = index
        self._folds[type(fact)](fact)

    def policy_set(self, fact: facts.PolicySet) -> None:
        self.state.policies[fact.tool] = Registered(fact.policy, fact.hints)

    def session_opened(self, fact: facts.SessionOpened) -> None:
        existing = self.state.sessions.get(fact.session_id)
        if existing is None:
            self.state.sessions[fact.session_id] = Session(fact.session_id, fact.default_effect,
                                                           fact.hints_may_lower)
        else:
            existing.default_effect = fact.default_effect
            existing.hints_may_lower = fact.hints_may_lower

    def answered(self, fact: facts.Answered) -> None:
        self.call(fact.key).approval = fact.state

    def recorded(self, fact: facts.Recorded) -> None:
        call = self.call(fact.key)
        call.outcome, call.output, call.pending = fact.outcome, fact.output, None
        call.session.messages.append(tool_message(call, fact.outcome, fact.output))

    def user_message(self, fact: facts.UserMessageAdded) -> None:
        self.session(fact.session_id).messages.append(Message(MessageRole.USER, fact.text))

    def run_over(self, fact: facts.RunOver) -> None:
        self.state.run_over(fact.attempt, fact.worker)

    def worker_lost(self, fact: facts.WorkerLost) -> None:
        self.state.runs_over_at(fact.worker)

    def asked(self, fact: facts.Asked) -> None:
        if fact.key in self.state.calls:
            self.fail(f"a second ask for key {fact.key!r}")
        session = self.session(fact.session_id)
        call = Call(fact.key, session, fact.turn_id, fact.tool_call_id, fact.tool,
                    fact.arguments, fact.policy, fact.at,
                    initial_approval(fact.policy.requires_approval), fact.approval_deadline)
        self.state.calls[fact.key] = call
        session.calls.append(call)

    def queued(self, fact: facts.Queued) -> None:
        call = self.call(fact.key)
        if fact.number != call.attempts_made + 1:
            self.fail(f"attempt {fact.number} of {fact.key!r} follows attempt "
                      f"{call.attempts_made}")
        if call.current is not None and call.current.phase is not Phase.ENDED:
            self.fail(f"attempt {fact.number} of {fact.key!r} queued while attempt "
                      f"{call.current.number} has not ended")
        self.state.new_attempt(call, fact.at)

    def handed(self, fact: facts.Handed) -> None:
        attempt = self.live(fact.attempt)
        if attempt.phase is Phase.QUEUED:
            self.state.hand(attempt, fact.worker, fact.at)
        else:
            attempt.worker = fact.worker

    def ended(self, fact: facts.Ended) -> None:
        attempt = self.live(fact.attempt)
        if fact.end not in ENDS_FROM[attempt.phase]:
            where = "was never handed out" if attempt.phase is Phase.QUEUED else "was handed out"
            self.fail(f"attempt {fact.attempt!r} cannot end {fact.end.value}: it {where}")
        self.state.end(attempt, fact.end, fact.at)
        if fact.may_still_run:
            self.state.abandon(attempt)
        call = attempt.call
        outcome = after_end(call, fact.end, self.decide(call, fact.end), fact.output)
        if outcome is not None and call.outcome is None:
            call.pending, call.pending_output = outcome, fact.output


def replay(state: ExecutorState, entries: Sequence[object], decide: Decide) -> None:
    """Fold every journal entry into `state`, in order; SpecError on the first bad one."""
    fold = _Fold(state, decide)
    for index, entry in enumerate(entries):
        fold.apply(index, reader.read_entry(index, entry))
