"""The rules about asking and approval: a new call, its key and kept policy, then a wait for a
person's answer or the deadline, or its first attempt (TC-KEY-2, TC-SNAP-1, TC-APR-2, TC-APR-3,
TC-APR-4, TC-REC-REJ, D-2, D-7, D-32).
"""

from __future__ import annotations

from atmostonce.executor import journal
from atmostonce.executor.attempts import AttemptRules
from atmostonce.executor.keys import call_key
from atmostonce.executor.members import ACCEPTED, APPROVAL, APPROVAL_ID, APPROVE, REJECT, WAITING
from atmostonce.executor.state import Call
from atmostonce.spec.approval import (
    REPLY_TEXT,
    ApprovalEvent,
    ApprovalReply,
    ApprovalState,
    answer,
    initial_approval,
    may_attempt,
)
from atmostonce.spec.protocol import Answer, Ask, Command, Persist, Reply, StartTimer, StopTimer
from atmostonce.spec.records import RejectReason, rejected


class ApprovalRules(AttemptRules):
    """Asking and approval (TC-KEY-2, TC-APR-2, TC-APR-3, TC-APR-4, D-7)."""

    def on_ask(self, event: Ask) -> list[Command]:
        """A new call: its key (TC-KEY-2; SpecError for an ambiguous component, D-2), its policy
        resolved now and kept with its approval deadline (TC-SNAP-1, D-32), then a wait for
        approval or its first attempt (TC-APR-2, TC-APR-3, TC-APR-4). A second ask with the
        same key is ignored."""
        key = call_key(event.session_id, event.turn_id, event.tool_call_id)
        state = self.state
        if key in state.calls:
            return []
        out: list[Command] = []
        session = state.sessions.get(event.session_id)
        if session is None:
            session = self.open_session(event.session_id, None, event.at, out)
        policy = self.resolve(event.tool, session)
        deadline = self.ask_deadline(event.tool, event.approval_deadline)
        call = Call(key, session, event.turn_id, event.tool_call_id, event.tool,
                    event.arguments, policy, event.at, initial_approval(policy.requires_approval),
                    deadline)
        state.calls[key] = call
        session.calls.append(call)
        out.append(Persist(journal.ask_entry(event.at, key, event.session_id, event.turn_id,
                                             event.tool_call_id, event.tool, event.arguments,
                                             policy, deadline)))
        if call.approval is WAITING:
            out.append(StartTimer(APPROVAL_ID + key, self.deadline_of(call), APPROVAL, key,
                                  key))
        else:
            self.queue_attempt(call, event.at, out)
        return out

    def approval_answer(self, state: ApprovalState,
                        event: ApprovalEvent) -> tuple[ApprovalState, ApprovalReply]:
        """The first answer or deadline that lands decides; later ones change nothing (D-7)."""
        return answer(state, event)

    def on_answer(self, event: Answer) -> list[Command]:
        """A person's answer, replied to after it is durable (D-7, TC-REC-REJ). The kept
        deadline is read by the clock: an answer that comes after it loses to it even when
        the deadline's timer is late, as after a stalled loop or a restart (D-32)."""
        call = self.state.calls.get(event.key)
        if call is None:
            return [Reply(event.request, False,
                          f"no tool call has the idempotency key {event.key!r}")]
        if call.approval is WAITING and self.deadline_passed(call, event.at):
            late = self.on_approval_deadline(call.key, event.at)
            late.append(StopTimer(APPROVAL_ID + call.key))
            late.append(Reply(event.request, False, REPLY_TEXT[ApprovalReply.DEADLINE_PASSED]))
            return late
        new, reply = self.approval_answer(
            call.approval, APPROVE if event.approve else REJECT)
        out: list[Command] = []
        accepted = reply is ACCEPTED
        if accepted:
            call.approval = new
            out.append(Persist(journal.approval_entry(event.at, call.key, new)))
            out.append(StopTimer(APPROVAL_ID + call.key))
            if may_attempt(new):
                self.queue_attempt(call, event.at, out)
            else:
                self.finalize(call, rejected(RejectReason.PERSON), "", event.at, out)
        out.append(Reply(event.request, accepted, REPLY_TEXT[reply]))
        return out

    def deadline_passed(self, call: Call, at: float) -> bool:
        """Whether the approval deadline `call` kept from ask time has passed by `at` (D-32)."""
        return at >= call.asked_at + self.deadline_of(call)

    def on_approval_deadline(self, key: str, at: float) -> list[Command]:
        """Nobody answered in time: the call is rejected (TC-REC-REJ, D-7)."""
        call = self.state.calls.get(key)
        if call is None or call.approval is not WAITING:
            return []
        call.approval, _ = self.approval_answer(call.approval, ApprovalEvent.DEADLINE)
        out: list[Command] = [Persist(journal.approval_entry(at, key, call.approval))]
        self.finalize(call, rejected(RejectReason.DEADLINE), "", at, out)
        return out
