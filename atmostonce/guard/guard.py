"""The guard: a framework's tool functions with the page's semantics, over the journal.

    guard = Guard(Path("guard.db"))
    guard.ask(key, "cancel_order", arguments, Statement(policy=ToolPolicy(...)))
    result = await guard.run(key, tool)        # a Finished record, or Waiting for approval
    guard.answer(key, approve=True)            # D-7: the first answer, or the deadline, decides

`run` is what the framework calls in place of the tool, as often as it likes, in any process:
each call decides from the journal (`moves.next_move`), so a finished call gives back its
result, a single-attempt call whose attempt began and never ended is outcome_unknown, and a
read or an idempotent write is tried at most max_attempts times in all, however many processes
died on the way (max_attempts as the guard's settings said when the call was asked). The tool
gets the attempt (`Attempt`: key, number, label) and passes the key to the service it writes
to; it returns its output, or raises `ToolFailed` when it reports a failure itself (D-3). Any
other exception means the tool may have run.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from atmostonce.guard.calls import GuardSettings, KeptCall, Statement, keep
from atmostonce.guard.journal import Approval, Attempt, Finished, Journal, Tx
from atmostonce.guard.moves import Replay, Run, Settle, Wait, next_move
from atmostonce.spec.approval import ApprovalEvent, ApprovalReply, ApprovalState, answer
from atmostonce.spec.errors import SpecError
from atmostonce.spec.records import AttemptEnd, FailureKind, Outcome, Record, failure_text
from atmostonce.spec.session import tool_result_text


class ToolFailed(Exception):
    """Raised by a tool that reports a failure itself: the call records failed, with this
    error, and is never run again (D-3)."""


class UnknownCall(SpecError):
    """The guard was never told about a call with this key (`Guard.ask`)."""


@dataclass(frozen=True)
class Waiting:
    """The call waits for a person's answer until `deadline` (the guard's clock)."""

    key: str
    deadline: float


def result_text(result: Finished) -> str:
    """The tool result the model reads for a finished call (TC-REC-2)."""
    return tool_result_text(result.outcome, result.output)


Tool = Callable[[Attempt], Awaitable[str]]
"""A tool as the guard runs it: one attempt in, the output out."""

_CURRENT: contextvars.ContextVar[Attempt] = contextvars.ContextVar("atmostonce_guard_attempt")


def current_attempt() -> Attempt:
    """The attempt the guard is running in this context: for tool code the framework calls
    without a way to pass it (the key goes to the service, TC-KEY-1)."""
    try:
        return _CURRENT.get()
    except LookupError:
        raise SpecError("no guarded attempt runs here: call the tool through Guard.run") from None


def default_label(key: str, number: int) -> str:
    return f"{key}#{number}"


class Guard:
    """The page's semantics over the journal at `journal` (see the module docstring). `clock`
    gives every time the journal keeps; processes sharing a journal must share the clock."""

    def __init__(self, journal: Journal | Path, settings: GuardSettings | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.journal = journal if isinstance(journal, Journal) else Journal(journal)
        self.settings = settings or GuardSettings()
        self.clock = clock

    def ask(self, key: str, tool: str, arguments: str = "{}",
            statement: Statement | None = None) -> KeptCall:
        """Keep the call the model asks for, with its policy resolved now; asked again (by a
        process that runs the same step again), the call kept first, unchanged (TC-SNAP-1)."""
        with self.journal.transaction() as tx:
            now = self.clock()
            kept = keep(key, tool, arguments, statement or Statement(), self.settings, now)
            tx.add_call(kept)
            found = tx.call(key)
        assert found is not None
        return found

    def call(self, key: str) -> KeptCall:
        with self.journal.reading() as tx:
            found = tx.call(key)
        if found is None:
            raise UnknownCall(f"no call {key}: the guard was never asked for it")
        return found

    # -- approvals --------------------------------------------------------------------------

    def answer(self, key: str, approve: bool) -> ApprovalReply:
        """A person's answer, by D-7's table: accepted only while the call waits and its
        deadline has not passed; a second, stale or late answer changes nothing."""
        event = ApprovalEvent.APPROVE if approve else ApprovalEvent.REJECT
        with self.journal.transaction() as tx:
            now = self.clock()
            if tx.call(key) is None:
                raise UnknownCall(f"no call {key}: the guard was never asked for it")
            found = tx.approval(key)
            if found is None:
                return ApprovalReply.NOT_REQUIRED
            state = self._expire(tx, found, now)
            new, reply = answer(state, event)
            if reply is ApprovalReply.ACCEPTED:
                tx.set_approval(key, new, now, approve)
            return reply

    def approval(self, key: str) -> ApprovalState:
        """Where the call's approval stands now: a deadline found passed rejects it, durably."""
        with self.journal.transaction() as tx:
            found = tx.approval(key)
            if found is None:
                if tx.call(key) is None:
                    raise UnknownCall(f"no call {key}: the guard was never asked for it")
                return ApprovalState.NOT_REQUIRED
            return self._expire(tx, found, self.clock())

    def approvals(self, session: str | None = None) -> list[Approval]:
        """The approval inbox: every call that waited or waits for one, in ask order."""
        with self.journal.reading() as tx:
            return tx.approvals(session)

    def expire(self, keys: list[str]) -> list[str]:
        """Reject, for their deadline, the calls of `keys` still waiting past it; those keys."""
        done = []
        with self.journal.transaction() as tx:
            now = self.clock()
            for key in keys:
                found = tx.approval(key)
                if (found is not None and found.state is ApprovalState.WAITING
                        and self._expire(tx, found, now) is ApprovalState.EXPIRED):
                    done.append(key)
        return done

    @staticmethod
    def _expire(tx: Tx, found: Approval, now: float) -> ApprovalState:
        if found.state is ApprovalState.WAITING and now >= found.deadline:
            new, _ = answer(found.state, ApprovalEvent.DEADLINE)
            tx.set_approval(found.key, new, now)
            return new
        return found.state

    # -- runs -------------------------------------------------------------------------------

    async def run(self, key: str, tool: Tool,
                  label: Callable[[str, int], str] = default_label) -> Finished | Waiting:
        """Run the call's tool if the page allows it now (see the module docstring): its
        result, or Waiting while a person has not answered."""
        while True:
            step = await asyncio.to_thread(self._step, key, label)
            if not isinstance(step, Attempt):
                return step
            token = _CURRENT.set(step)
            try:
                output = await tool(step)
            except ToolFailed as failure:
                outcome = Outcome(Record.FAILED, failure_text(FailureKind.TOOL_ERROR,
                                                              str(failure)),
                                  FailureKind.TOOL_ERROR)
                return await asyncio.to_thread(self._finish, step, AttemptEnd.TOOL_FAILED,
                                               Finished(key, outcome, "", step.label))
            except Exception:
                if await asyncio.to_thread(self._lost, step):
                    await asyncio.sleep(self.settings.retry_backoff)
                continue
            finally:
                _CURRENT.reset(token)
            return await asyncio.to_thread(
                self._finish, step, AttemptEnd.RETURNED,
                Finished(key, Outcome(Record.SUCCEEDED, ""), output, step.label))

    def _step(self, key: str, label: Callable[[str, int], str]
              ) -> Finished | Waiting | Attempt:
        """Decide and, in the same transaction, write what the decision needs: an attempt's
        intent, or the record of a call that must not run."""
        with self.journal.transaction() as tx:
            now = self.clock()
            call = tx.call(key)
            if call is None:
                raise UnknownCall(f"no call {key}: ask the guard for it before running it")
            found = tx.approval(key)
            state = (self._expire(tx, found, now) if found is not None
                     else ApprovalState.NOT_REQUIRED)
            result = tx.result(key)
            attempts = tx.attempts(key)
            move = next_move(result is not None, state, call.policy.effect,
                             [a.end for a in attempts], call.max_attempts)
            if isinstance(move, Replay):
                assert result is not None
                return result
            if isinstance(move, Wait):
                assert call.deadline is not None
                return Waiting(key, call.deadline)
            if isinstance(move, Run):
                return tx.begin(key, move.number, label(key, move.number), now)
            assert isinstance(move, Settle)
            last = attempts[-1].label if attempts else None
            for attempt in attempts:
                if attempt.end is None:
                    tx.end(attempt, AttemptEnd.WORKER_LOST, now)
            return tx.finish(Finished(key, move.outcome, "", last), now)

    def _finish(self, attempt: Attempt, end: AttemptEnd, result: Finished) -> Finished:
        with self.journal.transaction() as tx:
            now = self.clock()
            tx.end(attempt, end, now)
            return tx.finish(result, now)

    def _lost(self, attempt: Attempt) -> bool:
        """End an attempt whose run failed outside the tool; whether its call has retries."""
        with self.journal.transaction() as tx:
            tx.end(attempt, AttemptEnd.WORKER_LOST, self.clock())
            call = tx.call(attempt.key)
        return call is not None and call.policy.retries_allowed

    def result(self, key: str) -> Finished | None:
        with self.journal.reading() as tx:
            return tx.result(key)

    def attempts(self, key: str | None = None) -> list[Attempt]:
        with self.journal.reading() as tx:
            return tx.attempts(key)
