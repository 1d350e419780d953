"""The executor's speed devices, in one place: enum members as module names, the timer-id
prefixes, and tables keyed by a member's value. The rules run for every event of every
simulated call, and in CPython 3.11 reading a member from its class (`Phase.QUEUED`) and
hashing a member (a dict keyed by members) each run Python code, about 0.12 µs a time, where a
module name or a string's cached hash costs about 0.01 µs. The rules also read `._value_`
(not the `.value` property) where they write a member into a journal entry or a memo's key.

Each pays, as instructions per simulated call of the simulator benchmark's measured run under
cachegrind (`PYTHONHASHSEED=0 valgrind --tool=cachegrind --cache-sim=no python
benchmarks/simulate.py --seeds 11 --repeat 2`, less the same with `--repeat 1`, the plain form
against this one): the module names 1.4%, the `._value_` reads 1.1%, the value-keyed tables
0.7%, the timer-id prefixes 0.6%; together they keep the simulator within 3% of its speed
before the one host (`atmostonce.check.host`) took over carrying out the commands.
"""

from __future__ import annotations

from collections.abc import Mapping

from atmostonce.executor.state import Phase
from atmostonce.executor.timers import prefix
from atmostonce.spec.approval import ApprovalEvent, ApprovalReply, ApprovalState
from atmostonce.spec.policy import DurableStep, EffectClass, step_for
from atmostonce.spec.protocol import TimerKind
from atmostonce.spec.records import AttemptEnd, Record
from atmostonce.spec.session import MessageRole, ToolCallStatus

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

CALL_TOOL = DurableStep.CALL_TOOL
SINGLE_ATTEMPT = DurableStep.CALL_SINGLE_ATTEMPT_TOOL

TOOL = MessageRole.TOOL
AWAITING_APPROVAL = ToolCallStatus.AWAITING_APPROVAL
RUNNING = ToolCallStatus.RUNNING

APPROVAL_ID = prefix(APPROVAL)
QUEUE_ID = prefix(QUEUE)
RUN_ID = prefix(RUN)
BACKOFF_ID = prefix(BACKOFF)
"""The timer-id prefixes: `prefix(kind) + subject` is the timer's id."""

STEP_OF: Mapping[str, DurableStep] = {e._value_: step_for(e) for e in EffectClass}
"""TC-EFF-*: the durable step that runs each effect class (`spec.policy.step_for`), by the
class's value."""

STATUS_OF_RECORD: Mapping[str, ToolCallStatus] = {r._value_: ToolCallStatus.of_record(r)
                                                  for r in Record}
"""TC-RCN-FIND: the status a record shows, by the record's value."""
