"""The rules about tools' policies and sessions: a policy registered or changed, a session opened
with its default, the policy a call resolves at ask time and keeps for every later decision
(TC-POL-1, TC-SNAP-1, TC-SNAP-2), and a person's words joining a session's history
(TC-RCN-TELL).

`PolicyRules` is the root of the reference executor's rule classes: each module beside it adds
one concern on top of those it uses (`attempts`, then `approvals` and `workers`, then `restart`),
and `core.ReferenceExecutor` is made of them all.
"""

from __future__ import annotations

from atmostonce.executor import journal
from atmostonce.executor.members import CALL_TOOL, SINGLE_ATTEMPT, STEP_OF
from atmostonce.executor.state import Call, ExecutorState, Registered, Session
from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
    choose_deadline,
    resolve_policy,
)
from atmostonce.spec.protocol import (
    Command,
    ExecutorConfig,
    OpenSession,
    Persist,
    Reply,
    SetPolicy,
    UserMessage,
)
from atmostonce.spec.session import Message, MessageRole


class PolicyRules:
    """Policies and sessions (TC-POL-1, TC-SNAP-1, TC-SNAP-2, TC-RCN-TELL)."""

    config: ExecutorConfig
    state: ExecutorState
    _resolved: dict[str, dict[tuple[str | None, bool], EffectivePolicy]]
    """Resolved policies by tool, then by the value of the session default and whether hints
    may lower it; forgotten whenever a policy changes."""

    # -- policies and sessions --------------------------------------------------------------------

    def on_set_policy(self, event: SetPolicy) -> list[Command]:
        """Register or change a tool's policy; calls already asked keep theirs (TC-SNAP-2)."""
        self.state.policies[event.tool] = Registered(event.policy, event.hints)
        self._resolved.clear()
        return [Persist(journal.policy_entry(event.at, event.tool, event.policy, event.hints))]

    def on_open_session(self, event: OpenSession) -> list[Command]:
        out: list[Command] = []
        self.open_session(event.session_id, event.default_effect, event.at, out,
                          event.hints_may_lower)
        return out

    def open_session(self, session_id: str, default_effect: EffectClass | None, at: float,
                     out: list[Command], hints_may_lower: bool = True) -> Session:
        session = self.state.sessions.get(session_id)
        if session is None:
            session = Session(session_id, default_effect, hints_may_lower)
            self.state.sessions[session_id] = session
        else:
            session.default_effect = default_effect
            session.hints_may_lower = hints_may_lower
        out.append(Persist(journal.session_entry(at, session_id, default_effect,
                                                 hints_may_lower)))
        return session

    def resolve(self, tool: str, session: Session) -> EffectivePolicy:
        """The tool's effective policy now: its policy, else its framework hints, else the
        session default, else unclassified (TC-POL-1, TC-APR-5, D-1); a session may keep its
        default as a floor that hints cannot lower (D-22)."""
        default = session.default_effect
        of_tool = self._resolved.get(tool)
        if of_tool is None:
            of_tool = self._resolved[tool] = {}
        lowers = session.hints_may_lower
        slot = (default._value_ if default is not None else None, lowers)
        policy = of_tool.get(slot)
        if policy is None:
            registered = self.state.policies.get(tool)
            if registered is None:
                policy = resolve_policy(None, None, default, lowers)
            else:
                policy = resolve_policy(registered.policy, registered.hints, default, lowers)
            of_tool[slot] = policy
        return policy

    def ask_deadline(self, tool: str, asked: float | None) -> float:
        """The approval deadline a call of `tool` asked now keeps: the ask's, else the tool
        policy's, else the executor's setting (D-32)."""
        registered = self.state.policies.get(tool)
        policy = registered.policy if registered is not None else None
        return choose_deadline(asked, policy.approval_deadline if policy is not None else None,
                               self.config.approval_deadline)

    def deadline_of(self, call: Call) -> float:
        """The approval deadline `call` kept from ask time (D-32, TC-SNAP-1)."""
        kept = call.approval_deadline
        return self.config.approval_deadline if kept is None else kept

    def policy_of(self, call: Call) -> EffectivePolicy:
        """The policy every decision about `call` reads: the one it kept from ask time
        (TC-SNAP-1, TC-SNAP-2)."""
        return call.policy

    def single(self, call: Call) -> bool:
        """Whether the call runs in CallSingleAttemptTool (TC-EFF-NONIDEM, TC-EFF-UNCL)."""
        return STEP_OF[self.policy_of(call).effect._value_] is SINGLE_ATTEMPT

    def max_attempts(self, policy: EffectivePolicy) -> int:
        """CallTool makes up to `max_attempts` attempts, CallSingleAttemptTool one (TC-POL-2)."""
        return self.config.max_attempts if STEP_OF[policy.effect._value_] is CALL_TOOL \
            else 1

    # -- the session's history --------------------------------------------------------------------

    def on_user_message(self, event: UserMessage) -> list[Command]:
        """`send_user_message`: the text joins the history as the user's words (TC-RCN-TELL),
        where the next turn's model reads it (TC-RCN-NEXT)."""
        session = self.state.sessions.get(event.session_id)
        if session is None:
            return [Reply(event.request, False, f"no session {event.session_id!r}")]
        session.messages.append(Message(MessageRole.USER, event.text))
        return [Persist(journal.user_message_entry(event.at, event.session_id, event.text)),
                Reply(event.request, True)]
