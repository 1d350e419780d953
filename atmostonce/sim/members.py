"""The simulator's speed device, in one place: the enum members its parts test for every
message, run and call, as module names. In CPython 3.11 reading a member from its class
(`Person.MISS`) runs Python code, about 0.12 µs a time, where a module name costs about
0.01 µs; spelled out, these cost 1.0% of the instructions per simulated call of the simulator
benchmark's measured run under cachegrind (`PYTHONHASHSEED=0 valgrind --tool=cachegrind
--cache-sim=no python benchmarks/simulate.py --seeds 11 --repeat 2`, less the same with
`--repeat 1`)."""

from __future__ import annotations

from atmostonce.check.history import entries as h
from atmostonce.check.history.services import Service
from atmostonce.sim.workload import Person
from atmostonce.spec.protocol import TimerKind
from atmostonce.spec.session import ToolCallStatus

OUTCOME_UNKNOWN = ToolCallStatus.OUTCOME_UNKNOWN

MISS = Person.MISS
REJECT = Person.REJECT
TWICE = Person.TWICE
FLIP = Person.FLIP

NO_SERVICE = Service.NONE
KEYED = Service.KEYED
PLAIN = Service.PLAIN

RUN_RETURNED = h.RunEnd.RETURNED
RUN_TOOL_FAILED = h.RunEnd.TOOL_FAILED

QUEUE_TIMEOUT = TimerKind.QUEUE_TIMEOUT
APPROVAL_DEADLINE = TimerKind.APPROVAL_DEADLINE
HEARTBEAT_TIMEOUT = TimerKind.HEARTBEAT_TIMEOUT
