"""Enum members the executor's rules test on every event, as module names: reading a member from
its class takes a slow attribute lookup each time in CPython 3.11."""

from __future__ import annotations

from atmostonce.executor.state import Phase
from atmostonce.spec.approval import ApprovalEvent, ApprovalReply, ApprovalState
from atmostonce.spec.protocol import TimerKind
from atmostonce.spec.records import AttemptEnd

QUEUED = Phase.QUEUED
HANDED = Phase.HANDED
STARTED = Phase.STARTED
ENDED = Phase.ENDED

RETURNED = AttemptEnd.RETURNED
TOOL_FAILED = AttemptEnd.TOOL_FAILED
CANCELLED = AttemptEnd.CANCELLED
NOT_REACHED = AttemptEnd.NOT_REACHED
WORKER_LOST = AttemptEnd.WORKER_LOST

WAITING = ApprovalState.WAITING
APPROVE = ApprovalEvent.APPROVE
REJECT = ApprovalEvent.REJECT
ACCEPTED = ApprovalReply.ACCEPTED

APPROVAL = TimerKind.APPROVAL_DEADLINE
QUEUE = TimerKind.QUEUE_TIMEOUT
RUN = TimerKind.RUN_TIMEOUT
HEARTBEAT = TimerKind.HEARTBEAT_TIMEOUT
BACKOFF = TimerKind.RETRY_BACKOFF
