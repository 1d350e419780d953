"""Enum members the history's judges test on every entry, as module names.

Reading a member from its class (`ToolCallStatus.SUCCEEDED`) runs a Python-level lookup in
CPython 3.11, about 0.12 µs against 0.01 µs for a module name, and the judges test some twenty
of them per simulated call. Spelling them out in the judges adds 2.3% to the instructions per
simulated call of the benchmark's measured run (`PYTHONHASHSEED=0 valgrind --tool=cachegrind
--cache-sim=no python benchmarks/simulate.py --seeds 11 --repeat 2`, less the same with
`--repeat 1`, on both trees) and took 3% off its calls per CPU second (median of 20 alternated
pairs of `python benchmarks/simulate.py --seeds 25 --repeat 3`). Reading `_value_` for the
judges' tables measured 0.3% by the same count and was dropped.
"""

from __future__ import annotations

from atmostonce.check.history import entries as h
from atmostonce.spec.approval import ApprovalEvent, ApprovalReply, ApprovalState
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import TimerKind
from atmostonce.spec.session import ToolCallStatus

SUCCEEDED = ToolCallStatus.SUCCEEDED
FAILED = ToolCallStatus.FAILED
REJECTED = ToolCallStatus.REJECTED
OUTCOME_UNKNOWN = ToolCallStatus.OUTCOME_UNKNOWN
RUNNING = ToolCallStatus.RUNNING
AWAITING_APPROVAL = ToolCallStatus.AWAITING_APPROVAL
WAITING = ApprovalState.WAITING
APPROVED = ApprovalState.APPROVED
APPROVE = ApprovalEvent.APPROVE
REJECT = ApprovalEvent.REJECT
ACCEPTED = ApprovalReply.ACCEPTED
READ = EffectClass.READ
RUN_RETURNED = h.RunEnd.RETURNED
RUN_TOOL_FAILED = h.RunEnd.TOOL_FAILED
APPROVAL_DEADLINE = TimerKind.APPROVAL_DEADLINE
QUEUE_TIMEOUT = TimerKind.QUEUE_TIMEOUT
