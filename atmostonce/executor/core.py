"""The reference executor: a deterministic, sans-IO state machine that runs tool calls by the
rules of `atmostonce.spec`, speaking the protocol of `atmostonce.spec.protocol`.

Events come in, commands go out; time arrives inside events and timers are requests. Each rule
is one small method, so a deliberately broken variant (`atmostonce.executor.mutants`) overrides
exactly one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from atmostonce.executor import journal
from atmostonce.executor.keys import call_key
from atmostonce.executor.recovery import after_end, replay
from atmostonce.executor.state import (
    Attempt,
    Call,
    ExecutorState,
    Phase,
    Registered,
    Session,
    Worker,
)
from atmostonce.executor.timers import parse_timer, prefix, timer_id
from atmostonce.executor.views import STATUS_OF_RECORD, snapshot, tool_message
from atmostonce.spec.approval import (
    REPLY_TEXT,
    ApprovalEvent,
    ApprovalReply,
    ApprovalState,
    answer,
    initial_approval,
    may_attempt,
)
from atmostonce.spec.errors import SpecError
from atmostonce.spec.fence import fence_blocks
from atmostonce.spec.policy import EffectClass, EffectivePolicy, Step, resolve_policy, step_for
from atmostonce.spec.protocol import (
    JSON,
    Answer,
    Ask,
    Cancel,
    Command,
    Connected,
    DropWorker,
    Event,
    ExecutorConfig,
    Finished,
    GoAhead,
    Heartbeat,
    NoWork,
    OpenSession,
    Persist,
    Poll,
    Publish,
    Reply,
    SetPolicy,
    Started,
    StartTimer,
    StopTimer,
    TimerFired,
    TimerKind,
    UserMessage,
)
from atmostonce.spec.records import (
    AttemptEnd,
    Decision,
    Outcome,
    RejectReason,
    decide,
    rejected,
)
from atmostonce.spec.session import (
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallFinished,
)

_APPROVAL = TimerKind.APPROVAL_DEADLINE
_QUEUE = TimerKind.QUEUE_TIMEOUT
_RUN = TimerKind.RUN_TIMEOUT
_HEARTBEAT = TimerKind.HEARTBEAT_TIMEOUT
_BACKOFF = TimerKind.RETRY_BACKOFF
_APPROVAL_ID = prefix(_APPROVAL)
_QUEUE_ID = prefix(_QUEUE)
_RUN_ID = prefix(_RUN)
_BACKOFF_ID = prefix(_BACKOFF)

# Enum members the rules test on every event, as module names: reading a member from its class
# takes a slow attribute lookup each time in CPython 3.11.
_QUEUED = Phase.QUEUED
_HANDED = Phase.HANDED
_STARTED = Phase.STARTED
_ENDED = Phase.ENDED
_RETURNED = AttemptEnd.RETURNED
_TOOL_FAILED = AttemptEnd.TOOL_FAILED
_CANCELLED = AttemptEnd.CANCELLED
_NOT_REACHED = AttemptEnd.NOT_REACHED
_WORKER_LOST = AttemptEnd.WORKER_LOST
_WAITING = ApprovalState.WAITING
_APPROVE = ApprovalEvent.APPROVE
_REJECT = ApprovalEvent.REJECT
_ACCEPTED = ApprovalReply.ACCEPTED
_CALL_TOOL = Step.CALL_TOOL
_SINGLE_ATTEMPT = Step.CALL_SINGLE_ATTEMPT_TOOL

# TC-EFF-*: the Step that runs each effect class (spec.policy.step_for), by the class's value:
# a string's hash is cached, an enum member's is computed in Python.
_STEP_OF: Mapping[str, Step] = {e._value_: step_for(e) for e in EffectClass}

_DURATIONS = ("retry_backoff", "queue_timeout", "run_timeout", "heartbeat_timeout", "lease",
              "approval_deadline")


def check_config(config: ExecutorConfig) -> None:
    """SpecError unless the options make sense; the lease must end before the heartbeat timeout
    declares a worker lost, or a lost worker could still be running a tool (D-12)."""
    attempts = config.max_attempts
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise SpecError(f"max_attempts must be a whole number >= 1, got {attempts!r}")
    for name in _DURATIONS:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                math.isfinite(value) and value >= 0):
            raise SpecError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
    if config.lease >= config.heartbeat_timeout:
        raise SpecError(f"lease ({config.lease}) must be shorter than heartbeat_timeout "
                        f"({config.heartbeat_timeout}): a worker cut off from the server must "
                        "stop its runs before it is declared lost")


class ReferenceExecutor:
    """The reference executor (TC-POL-1, TC-SNAP-1, TC-AMO-1, TC-REC-1, D-5, D-8)."""

    def __init__(self, config: ExecutorConfig) -> None:
        check_config(config)
        self.config = config
        self.state = ExecutorState()
        self._resolved: dict[str, dict[str | None, EffectivePolicy]] = {}
        """Resolved policies by tool, then by the value of the session default; forgotten
        whenever a policy changes."""
        self._decisions: dict[tuple[str, str, int, int, bool], Decision] = {}
        """`decide`'s answers by the values of its arguments: it is pure, and asked once per
        attempt."""
        self._handlers: dict[type[Event], Callable[[Any], list[Command]]] = {
            SetPolicy: self.on_set_policy,
            OpenSession: self.on_open_session,
            Ask: self.on_ask,
            Answer: self.on_answer,
            UserMessage: self.on_user_message,
            Connected: self.on_connected,
            Poll: self.on_poll,
            Started: self.on_started,
            Heartbeat: self.on_heartbeat,
            Finished: self.on_finished,
            TimerFired: self.on_timer,
        }
        self._timers: dict[TimerKind, Callable[[str, float], list[Command]]] = {
            _APPROVAL: self.on_approval_deadline,
            _QUEUE: self.on_queue_timeout,
            _RUN: self.on_run_timeout,
            _HEARTBEAT: self.on_heartbeat_timeout,
            _BACKOFF: self.on_retry_backoff,
        }

    # -- the protocol -----------------------------------------------------------------------------

    def handle(self, event: Event) -> list[Command]:
        """Take one event; events about unknown calls, attempts or workers change nothing."""
        handler = self._handlers.get(type(event))
        return handler(event) if handler is not None else []

    def snapshot(self, session_id: str) -> AgentSnapshot:
        """`get_agent_snapshot` (TC-RCN-FIND)."""
        return snapshot(self.state, session_id)

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> list[Command]:
        """Rebuild from the journal, then handle the restart (D-8): attempts out at a worker end
        as lost to it, queued ones stay queued, waiting approvals keep their deadline, and every
        worker that may still run an abandoned run must come back or be declared lost."""
        if not self.state.empty:
            raise SpecError("recover needs a fresh executor; this one already has state")
        replay(self.state, journal, self.decision)
        out: list[Command] = []
        for call in list(self.state.calls.values()):
            self.resume(call, at, out)
        for worker in list(self.state.abandoned_at):
            out.append(StartTimer(timer_id(_HEARTBEAT, worker), self.config.heartbeat_timeout,
                                  _HEARTBEAT, worker))
        return out

    # -- policies and sessions --------------------------------------------------------------------

    def on_set_policy(self, event: SetPolicy) -> list[Command]:
        """Register or change a tool's policy; calls already asked keep theirs (TC-SNAP-2)."""
        self.state.policies[event.tool] = Registered(event.policy, event.hints)
        self._resolved.clear()
        return [Persist(journal.policy_entry(event.at, event.tool, event.policy, event.hints))]

    def on_open_session(self, event: OpenSession) -> list[Command]:
        out: list[Command] = []
        self.open_session(event.session_id, event.default_effect, event.at, out)
        return out

    def open_session(self, session_id: str, default_effect: EffectClass | None, at: float,
                     out: list[Command]) -> Session:
        session = self.state.sessions.get(session_id)
        if session is None:
            session = Session(session_id, default_effect)
            self.state.sessions[session_id] = session
        else:
            session.default_effect = default_effect
        out.append(Persist(journal.session_entry(at, session_id, default_effect)))
        return session

    def resolve(self, tool: str, session: Session) -> EffectivePolicy:
        """The tool's effective policy now: its policy, else its framework hints, else the
        session default, else unclassified (TC-POL-1, TC-APR-5, D-1)."""
        default = session.default_effect
        of_tool = self._resolved.get(tool)
        if of_tool is None:
            of_tool = self._resolved[tool] = {}
        slot = default._value_ if default is not None else None
        policy = of_tool.get(slot)
        if policy is None:
            registered = self.state.policies.get(tool)
            if registered is None:
                policy = resolve_policy(None, None, default)
            else:
                policy = resolve_policy(registered.policy, registered.hints, default)
            of_tool[slot] = policy
        return policy

    def policy_of(self, call: Call) -> EffectivePolicy:
        """The policy every decision about `call` reads: the one it kept from ask time
        (TC-SNAP-1, TC-SNAP-2)."""
        return call.policy

    def single(self, call: Call) -> bool:
        """Whether the call runs in CallSingleAttemptTool (TC-EFF-NONIDEM, TC-EFF-UNCL)."""
        return _STEP_OF[self.policy_of(call).effect._value_] is _SINGLE_ATTEMPT

    def max_attempts(self, policy: EffectivePolicy) -> int:
        """CallTool makes up to `max_attempts` attempts, CallSingleAttemptTool one (TC-POL-2)."""
        return self.config.max_attempts if _STEP_OF[policy.effect._value_] is _CALL_TOOL \
            else 1

    # -- asking and approval ----------------------------------------------------------------------

    def on_ask(self, event: Ask) -> list[Command]:
        """A new call: its key (TC-KEY-2; SpecError for an ambiguous component, D-2), its policy
        resolved now and kept (TC-SNAP-1), then a wait for approval or its first attempt
        (TC-APR-2, TC-APR-3, TC-APR-4). A second ask with the same key is ignored."""
        key = call_key(event.session_id, event.turn_id, event.tool_call_id)
        state = self.state
        if key in state.calls:
            return []
        out: list[Command] = []
        session = state.sessions.get(event.session_id)
        if session is None:
            session = self.open_session(event.session_id, None, event.at, out)
        policy = self.resolve(event.tool, session)
        call = Call(key, session, event.turn_id, event.tool_call_id, event.tool,
                    event.arguments, policy, event.at, initial_approval(policy.requires_approval))
        state.calls[key] = call
        session.calls.append(call)
        out.append(Persist(journal.ask_entry(event.at, key, event.session_id, event.turn_id,
                                             event.tool_call_id, event.tool, event.arguments,
                                             policy)))
        if call.approval is _WAITING:
            out.append(StartTimer(_APPROVAL_ID + key, self.config.approval_deadline,
                                  _APPROVAL, key, key))
        else:
            self.queue_attempt(call, event.at, out)
        return out

    def approval_answer(self, state: ApprovalState,
                        event: ApprovalEvent) -> tuple[ApprovalState, ApprovalReply]:
        """The first answer or deadline that lands decides; later ones change nothing (D-7)."""
        return answer(state, event)

    def on_answer(self, event: Answer) -> list[Command]:
        """A person's answer, replied to after it is durable (D-7, TC-REC-REJ)."""
        call = self.state.calls.get(event.key)
        if call is None:
            return [Reply(event.request, False,
                          f"no tool call has the idempotency key {event.key!r}")]
        new, reply = self.approval_answer(
            call.approval, _APPROVE if event.approve else _REJECT)
        out: list[Command] = []
        accepted = reply is _ACCEPTED
        if accepted:
            call.approval = new
            out.append(Persist(journal.approval_entry(event.at, call.key, new)))
            out.append(StopTimer(_APPROVAL_ID + call.key))
            if may_attempt(new):
                self.queue_attempt(call, event.at, out)
            else:
                self.finalize(call, rejected(RejectReason.PERSON), "", event.at, out)
        out.append(Reply(event.request, accepted, REPLY_TEXT[reply]))
        return out

    def on_approval_deadline(self, key: str, at: float) -> list[Command]:
        """Nobody answered in time: the call is rejected (TC-REC-REJ, D-7)."""
        call = self.state.calls.get(key)
        if call is None or call.approval is not _WAITING:
            return []
        call.approval, _ = self.approval_answer(call.approval, ApprovalEvent.DEADLINE)
        out: list[Command] = [Persist(journal.approval_entry(at, key, call.approval))]
        self.finalize(call, rejected(RejectReason.DEADLINE), "", at, out)
        return out

    # -- the session's history --------------------------------------------------------------------

    def on_user_message(self, event: UserMessage) -> list[Command]:
        """`send_user_message`: the text joins the history as the user's words (TC-RCN-TELL)."""
        session = self.state.sessions.get(event.session_id)
        if session is None:
            return [Reply(event.request, False, f"no session {event.session_id!r}")]
        session.messages.append(Message(MessageRole.USER, event.text))
        return [Persist(journal.user_message_entry(event.at, event.session_id, event.text)),
                Reply(event.request, True)]

    # -- attempts ---------------------------------------------------------------------------------

    def queue_attempt(self, call: Call, at: float, out: list[Command]) -> None:
        """Queue the call's next attempt; it never reached a worker until it is handed out."""
        attempt = self.state.new_attempt(call)
        out.append(Persist(journal.queued_entry(at, attempt)))
        out.append(StartTimer(_QUEUE_ID + attempt.id, self.config.queue_timeout, _QUEUE,
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
        self.state.hand(attempt, worker.name)
        call = attempt.call
        out.append(StopTimer(_QUEUE_ID + attempt.id))
        persist = Persist(journal.handed_entry(at, attempt, worker.name))
        go = GoAhead(worker.name, attempt.id, self.key_for(attempt), call.tool, call.arguments,
                     self.config.lease)
        out.extend(self.hand_out_commands(persist, go))
        out.append(self.run_timer(attempt))

    def run_timer(self, attempt: Attempt) -> StartTimer:
        timer = attempt.run_timer
        if timer is None:
            timer = StartTimer(_RUN_ID + attempt.id, self.config.run_timeout, _RUN, attempt.id,
                               attempt.call.key)
            attempt.run_timer = timer
        return timer

    def on_queue_timeout(self, attempt_id: str, at: float) -> list[Command]:
        """No worker took the attempt in time: it never reached one (TC-REC-NOTRUN, D-10)."""
        attempt = self.state.live.get(attempt_id)
        if attempt is None or attempt.phase is not _QUEUED:
            return []
        out: list[Command] = []
        self.end_attempt(attempt, _NOT_REACHED, at, out)
        return out

    def on_run_timeout(self, attempt_id: str, at: float) -> list[Command]:
        """The attempt ran too long: cancel it, cooperatively, so its run may go on; for a
        single-attempt call remember that run (TC-AMO-3, D-4, D-9)."""
        attempt = self.state.live.get(attempt_id)
        if attempt is None or attempt.phase is _QUEUED or attempt.worker is None:
            return []
        out: list[Command] = [Cancel(attempt.worker, attempt.id)]
        self.end_attempt(attempt, _CANCELLED, at, out,
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
            found = decide(policy.effect, end, call.attempts_made, limit, call.reached)
            self._decisions[slot] = found
        return found

    def end_attempt(self, attempt: Attempt, end: AttemptEnd, at: float, out: list[Command],
                    output: str = "", may_go_on: bool = False) -> None:
        """The attempt ended with `end`: durably, then another attempt after the backoff or the
        call's record. `may_go_on` remembers a run that may still be going (TC-AMO-3)."""
        was_out = attempt.phase is not _QUEUED
        self.state.end(attempt, end)
        if was_out and end is not _CANCELLED:
            out.append(StopTimer(_RUN_ID + attempt.id))
        if may_go_on:
            self.state.abandon(attempt)
        call = attempt.call
        out.append(Persist(journal.ended_entry(at, attempt, end, may_go_on, output)))
        outcome = after_end(call, end, self.decision(call, end), output)
        if outcome is None:
            out.append(StartTimer(_BACKOFF_ID + call.key, self.config.retry_backoff,
                                  _BACKOFF, call.key, call.key))
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

    # -- workers ----------------------------------------------------------------------------------

    def touch(self, name: str, out: list[Command]) -> Worker:
        """Any message from a worker shows it is up and restarts its heartbeat timeout; an
        unknown or lost worker is (re)connected (D-12)."""
        worker = self.state.workers.get(name)
        if worker is None:
            beat = StartTimer(timer_id(_HEARTBEAT, name), self.config.heartbeat_timeout,
                              _HEARTBEAT, name)
            worker = Worker(name, beat, NoWork(name))
            self.state.workers[name] = worker
        out.append(worker.heartbeat)
        return worker

    def on_connected(self, event: Connected) -> list[Command]:
        """A worker connected. If the executor thought that worker held an attempt, the attempt
        is lost to its worker (TC-REC-LOST); its run may go on only if the worker lists it as
        still running, and then, for a single-attempt call, the fence counts it (TC-AMO-3, D-6).
        Abandoned runs the worker does not list are over."""
        out: list[Command] = []
        worker = self.touch(event.worker, out)
        held = worker.holding
        if held is not None:
            going = held.id in event.running
            self.lose_attempt(held, event.at, out, may_go_on=going and self.single(held.call))
        for attempt in sorted(self.state.abandoned_at.get(event.worker, set())):
            if attempt not in event.running and self.state.run_over(attempt, event.worker):
                out.append(Persist(journal.run_over_entry(event.at, attempt, event.worker)))
        return out

    def on_poll(self, event: Poll) -> list[Command]:
        """An idle worker asks for work: one attempt at a time, the oldest the fence lets go
        (TC-AMO-1, D-5, D-6)."""
        out: list[Command] = []
        worker = self.touch(event.worker, out)
        attempt = None if worker.holding is not None else self.next_attempt()
        if attempt is None:
            out.append(worker.no_work)
        else:
            self.hand_out(worker, attempt, event.at, out)
        return out

    def on_started(self, event: Started) -> list[Command]:
        """The worker started the tool on its go-ahead; the run timeout starts again (D-9)."""
        out: list[Command] = []
        self.touch(event.worker, out)
        attempt = self.state.live.get(event.attempt)
        if attempt is not None and attempt.phase is _HANDED and \
                attempt.worker == event.worker:
            attempt.phase = _STARTED
            out.append(self.run_timer(attempt))
        return out

    def on_heartbeat(self, event: Heartbeat) -> list[Command]:
        out: list[Command] = []
        self.touch(event.worker, out)
        return out

    def on_finished(self, event: Finished) -> list[Command]:
        """The tool returned or reported a failure. For the attempt its worker holds, that ends
        it (TC-REC-SUCC, D-3); otherwise it only says a run is over (TC-AMO-3, TC-REC-1)."""
        out: list[Command] = []
        self.touch(event.worker, out)
        attempt = self.state.live.get(event.attempt)
        if attempt is not None and attempt.phase is not _QUEUED and \
                attempt.worker == event.worker:
            end = _RETURNED if event.ok else _TOOL_FAILED
            self.end_attempt(attempt, end, event.at, out, output=event.output)
        else:
            self.late_finished(event, out)
        return out

    def late_finished(self, event: Finished, out: list[Command]) -> None:
        """A run the executor had given up on is over; it never changes a record (TC-REC-1), and
        the fence stops counting it (D-6)."""
        if self.state.run_over(event.attempt, event.worker):
            out.append(Persist(journal.run_over_entry(event.at, event.attempt, event.worker)))

    def lose_attempt(self, attempt: Attempt, at: float, out: list[Command],
                     may_go_on: bool) -> None:
        """The attempt's worker stopped or lost its connection after the hand-out, so the tool
        may have run (TC-REC-LOST, TC-AMO-2)."""
        self.end_attempt(attempt, _WORKER_LOST, at, out, may_go_on=may_go_on)

    def on_heartbeat_timeout(self, name: str, at: float) -> list[Command]:
        out: list[Command] = []
        self.declare_lost(name, at, out)
        return out

    def declare_lost(self, name: str, at: float, out: list[Command]) -> None:
        """The worker was silent for the heartbeat timeout: its attempt is lost, and its runs
        are over, since its lease ran out first (TC-REC-LOST, D-12)."""
        state = self.state
        worker = state.workers.get(name)
        if worker is None and name not in state.abandoned_at:
            return
        if worker is not None:
            if worker.holding is not None:
                self.lose_attempt(worker.holding, at, out, may_go_on=False)
            del state.workers[name]
        if state.runs_over_at(name):
            out.append(Persist(journal.worker_lost_entry(at, name)))
        out.append(DropWorker(name))

    # -- timers -----------------------------------------------------------------------------------

    def on_timer(self, event: TimerFired) -> list[Command]:
        """A timer this executor started fired; a stale one (its subject moved on) is a no-op."""
        parsed = parse_timer(event.timer)
        if parsed is None:
            return []
        kind, subject = parsed
        return self._timers[kind](subject, event.at)

    # -- restart (D-8) ----------------------------------------------------------------------------

    def resume(self, call: Call, at: float, out: list[Command]) -> None:
        """Pick the call up after a restart where its journal left it (D-8)."""
        attempt = call.current
        if attempt is not None and attempt.phase is not _ENDED:
            if attempt.phase is _QUEUED:
                out.append(StartTimer(_QUEUE_ID + attempt.id, self.config.queue_timeout,
                                      _QUEUE, attempt.id, call.key))
            else:
                self.recover_handed(attempt, at, out)
            return
        if call.outcome is not None:
            return
        if call.pending is not None:
            self.finalize(call, call.pending, call.pending_output, at, out)
        elif call.approval is ApprovalState.REJECTED:
            self.finalize(call, rejected(RejectReason.PERSON), "", at, out)
        elif call.approval is ApprovalState.EXPIRED:
            self.finalize(call, rejected(RejectReason.DEADLINE), "", at, out)
        elif call.approval is _WAITING:
            left = max(0.0, call.asked_at + self.config.approval_deadline - at)
            out.append(StartTimer(_APPROVAL_ID + call.key, left, _APPROVAL, call.key,
                                  call.key))
        elif call.backoff:
            out.append(StartTimer(_BACKOFF_ID + call.key, self.config.retry_backoff,
                                  _BACKOFF, call.key, call.key))
        elif call.attempts_made == 0:
            self.queue_attempt(call, at, out)

    def recover_handed(self, attempt: Attempt, at: float, out: list[Command]) -> None:
        """An attempt out at a worker when the server stopped: the connection is gone and what
        the worker did is unknown, so it is lost to its worker; a single-attempt call's run may
        still go on there (D-8, TC-RCN-ASK)."""
        self.lose_attempt(attempt, at, out, may_go_on=self.single(attempt.call))
