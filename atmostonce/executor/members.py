"""Enum members the executor's busiest rules test or pass on every event, as module names.

Reading a member from its class (`Phase.QUEUED`) runs a Python-level lookup in CPython 3.11,
about 0.12 µs against 0.01 µs for a module name. The rules that run for every attempt
(`attempts`, `workers`, `approvals`, `policies`, `views`) take their members from here; the
others spell them out. Spelling them out in those five modules too adds 1.4% to the
instructions per simulated call of the benchmark's measured run (`PYTHONHASHSEED=0 valgrind
--tool=cachegrind --cache-sim=no python benchmarks/simulate.py --seeds 11 --repeat 2`, less
the same with `--repeat 1`, on both trees); CPU-time A/B runs of `benchmarks/simulate.py` on a
shared two-core machine could not resolve a difference that small. The executor's other
tricks (`_value_` reads, tables keyed by a member's value, precomputed timer-id prefixes)
measured 0.6-1.1% each by the same count and were dropped.
"""

from __future__ import annotations

from atmostonce.executor.state import Phase
from atmostonce.spec.approval import ApprovalEvent, ApprovalReply, ApprovalState
from atmostonce.spec.policy import DurableStep
from atmostonce.spec.protocol import TimerKind
from atmostonce.spec.records import AttemptEnd
from atmostonce.spec.session import MessageRole, ToolCallStatus

QUEUED = Phase.QUEUED
HANDED = Phase.HANDED
STARTED = Phase.STARTED

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

CALL_TOOL = DurableStep.CALL_TOOL
SINGLE_ATTEMPT = DurableStep.CALL_SINGLE_ATTEMPT_TOOL

TOOL = MessageRole.TOOL
AWAITING_APPROVAL = ToolCallStatus.AWAITING_APPROVAL
RUNNING = ToolCallStatus.RUNNING
