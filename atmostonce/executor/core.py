"""The reference executor: a deterministic, sans-IO state machine that runs tool calls by the
rules of `atmostonce.spec`, speaking the protocol of `atmostonce.spec.protocol`.

Events come in, commands go out; time arrives inside events and timers are requests. Each rule
is one small method, so a deliberately broken variant (`atmostonce.executor.mutants`) overrides
exactly one of them. The rules are grouped by concern, one class to a module, each built on the
ones it uses: `policies` (policies and sessions), `attempts` (attempts and records), `approvals`
(asking and approval), `workers` and `restart`; `ReferenceExecutor` is all of them, with the
options' check and the dispatch of events and timers to their rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from atmostonce.executor.approvals import ApprovalRules
from atmostonce.executor.members import APPROVAL, BACKOFF, HEARTBEAT, QUEUE, RUN
from atmostonce.executor.restart import RestartRules
from atmostonce.executor.state import ExecutorState
from atmostonce.executor.timers import parse_timer
from atmostonce.executor.views import snapshot
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import (
    Answer,
    Ask,
    Command,
    Connected,
    Event,
    ExecutorConfig,
    Finished,
    Heartbeat,
    OpenSession,
    Poll,
    SetPolicy,
    Started,
    TimerFired,
    TimerKind,
    UserMessage,
)
from atmostonce.spec.session import AgentSnapshot

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


class ReferenceExecutor(RestartRules, ApprovalRules):
    """The reference executor (TC-POL-1, TC-SNAP-1, TC-AMO-1, TC-REC-1, D-5, D-8)."""

    def __init__(self, config: ExecutorConfig) -> None:
        check_config(config)
        self.config = config
        self.state = ExecutorState()
        self._resolved = {}
        self._decisions = {}
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
            APPROVAL: self.on_approval_deadline,
            QUEUE: self.on_queue_timeout,
            RUN: self.on_run_timeout,
            HEARTBEAT: self.on_heartbeat_timeout,
            BACKOFF: self.on_retry_backoff,
        }

    # -- the protocol -----------------------------------------------------------------------------

    def handle(self, event: Event) -> list[Command]:
        """Take one event; events about unknown calls, attempts or workers change nothing."""
        handler = self._handlers.get(type(event))
        return handler(event) if handler is not None else []

    def snapshot(self, session_id: str) -> AgentSnapshot:
        """`get_agent_snapshot` (TC-RCN-FIND, TC-SNAP-1, D-30, D-32)."""
        return snapshot(self.state, session_id, self.config.approval_deadline)

    # -- timers -----------------------------------------------------------------------------------

    def on_timer(self, event: TimerFired) -> list[Command]:
        """A timer this executor started fired; a stale one (its subject moved on) is a no-op."""
        parsed = parse_timer(event.timer)
        if parsed is None:
            return []
        kind, subject = parsed
        return self._timers[kind](subject, event.at)
