"""The history checker's judges of what the agent and people ask: the policies set, the sessions
opened, each call asked with the policy it keeps (TC-SNAP-1), and the answers to approvals with
the executor's replies (D-7). Properties: A-APPROVAL, A-POLICY-SNAPSHOT."""

from __future__ import annotations

from atmostonce.check.history import entries as h
from atmostonce.check.history.members import ACCEPTED, APPROVE, REJECT, WAITING
from atmostonce.check.history.state import Call, CheckerState
from atmostonce.spec.approval import REPLY_TEXT, ApprovalState, answer
from atmostonce.spec.policy import choose_deadline
from atmostonce.spec.properties import PropertyId

_REPLY_BY_TEXT = {text: reply for reply, text in REPLY_TEXT.items()}


class ApprovalChecks(CheckerState):
    """Judges of `PolicySet`, `SessionOpened`, `CallAsked` and `ApprovalAnswered`."""

    def _policy_set(self, e: h.PolicySet, pos: int) -> None:
        self._policies.set_policy(e.tool, e.policy, e.hints)

    def _session_opened(self, e: h.SessionOpened, pos: int) -> None:
        self._policies.set_default(e.session_id, e.default_effect,
                                   e.hints_may_lower is not False)

    def _call_asked(self, e: h.CallAsked, pos: int) -> None:
        """TC-SNAP-1, D-32: the call keeps the policy and the approval deadline in force now,
        resolved by the spec."""
        effective = self._policies.now(e.tool, e.session_id)
        call = Call(e.key, e.tool, e.session_id, pos, e.at, effective)
        call.deadline = choose_deadline(e.approval_deadline, self._policies.deadline(e.tool),
                                        self.config.approval_deadline)
        if e.taken_by is not None:
            call.asked_by = max(e.at, e.taken_by)
        self._calls[e.key] = call

    def _approval_answered(self, e: h.ApprovalAnswered, pos: int) -> None:
        """D-7: the first answer (or the deadline) that lands decides; the reply says so. The
        deadline is the call's kept one, by the clock from its ask, whether or not the
        executor's own timer has fired (a timer started afresh at a restart is late)."""
        c = self._calls.get(e.key)
        if c is None:
            if e.ok:
                self._bad(PropertyId.A_APPROVAL, e.key,
                          "an answer for a call nobody asked was accepted", pos)
            return
        state = c.approval
        by_clock = state is WAITING and (e.at > c.asked_by + c.deadline if e.ok
                                         else e.at >= c.asked_at + c.deadline)
        if by_clock:
            state = ApprovalState.EXPIRED  # the deadline landed first, however late its timer
        event = APPROVE if e.approve else REJECT
        new, reply = answer(state, event)
        said = _REPLY_BY_TEXT.get(e.text)
        verb = "an approval" if e.approve else "a rejection"
        if e.ok != (reply is ACCEPTED) or (said is not None and said is not reply):
            why = (f" (asked by {c.asked_by:.3f}, its kept deadline of {c.deadline:g} s had "
                   "passed by the clock, whether or not the executor's timer fired, D-32)"
                   if by_clock and e.ok else "")
            self._bad(PropertyId.A_APPROVAL, c,
                      f"{verb} of a call in state {state.value} got "
                      f"{'accepted' if e.ok else 'refused'} ({e.text!r}) at {e.at:.3f}; D-7 "
                      f"says {reply.value}{why}", c.pos, c.approval_pos, pos)
            if (not c.policy.requires_approval and e.ok
                    and self._policy_now(c).requires_approval):
                self._followed_later(c, lambda p: p.requires_approval,
                                     "an answer was accepted", pos)
        if new is not c.approval:
            c.approval = new
            c.approval_pos = pos
            c.approval_at = e.at
