"""The discrete-event core: a virtual clock, one event queue, a seed's scenario, and the run
that drives it to quiescence.

Every random choice comes from one seed, through separate streams: the workload's (drawn up
front), the fault schedule's, and the environment's (network delays, poll jitter), so that the
fault schedule can shrink while the workload stays. A run injects faults while the workload
goes on, then stops injecting them, heals everything and lets timers fire, so that the
eventually-properties are judged on a quiescent run.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Any

from atmostonce.check.executors import guard
from atmostonce.check.history import entries as h
from atmostonce.check.history.checkers import History
from atmostonce.check.history.policies import PolicyBook
from atmostonce.sim.agents import SETTLE, CallRun, SimulatedAgents
from atmostonce.sim.faults import WHILE_WAITING, Fault, FaultKind, Profile, schedule
from atmostonce.sim.ledger import Ledger
from atmostonce.sim.loop import Handler, Queued
from atmostonce.sim.server import SimServer
from atmostonce.sim.shapes import ShapeCounter
from atmostonce.sim.workers import HEARTBEAT_INTERVAL, Worker
from atmostonce.sim.workload import Workload, draw, executor_config
from atmostonce.spec import protocol as p
from atmostonce.spec.session import ToolCallStatus

HARD_LIMIT = 400.0
"""Simulated seconds after which a run that never quiesced is stopped and judged."""
WAIT_FOR_WAITING = 20.0
"""Seconds after the fault window a restart timed to a waiting call still waits for one."""
MAX_EVENTS = 2_000_000
"""Events after which a run that never settles (a timer loop at one instant) is stopped."""


def streams(seed: int) -> tuple[random.Random, random.Random, random.Random]:
    """The workload, fault and environment streams of `seed`."""
    return (random.Random(f"atmostonce:{seed}:workload"),
            random.Random(f"atmostonce:{seed}:faults"),
            random.Random(f"atmostonce:{seed}:environment"))


@dataclass(frozen=True, slots=True)
class Scenario:
    """What one seed runs: its workload, the enabled fault kinds and the fault schedule."""

    seed: int
    profile: Profile
    workload: Workload
    kinds: tuple[FaultKind, ...]
    faults: tuple[Fault, ...]
    config: p.ExecutorConfig


def scenario(seed: int, profile: Profile, only: Iterable[int] | None = None) -> Scenario:
    """The scenario of `seed`; `only` keeps just the faults at those schedule indexes."""
    workload_rng, fault_rng, _ = streams(seed)
    workload = draw(workload_rng)
    config = executor_config(workload.fence)
    kinds, faults = schedule(profile, fault_rng, workload.window, workload.workers, config)
    if only is not None:
        keep = set(only)
        faults = tuple(f for i, f in enumerate(faults) if i in keep)
    return Scenario(seed, profile, workload, kinds, faults, config)


def _counted(judge: Callable[[h.Entry], list[h.HistoryViolation]],
             count: Callable[[h.Entry], None]) -> Callable[[h.Entry], list[h.HistoryViolation]]:
    """`judge`, with every entry also counted by `count` (the run's shape coverage)."""
    def append(entry: h.Entry) -> list[h.HistoryViolation]:
        count(entry)
        return judge(entry)

    return append


class Simulation:
    """One run of one scenario against one executor factory: the clock, the event queue and the
    history (the `Loop` its parts see), the workload's policies and the fault schedule. It
    builds the passive parts, the server (`SimServer`, with its network), the workers and the
    agents, hands each what it needs when it builds it, and drives them by running the events
    they schedule."""

    # Slots, because every event reads and writes these.
    __slots__ = ("_append", "agents", "error", "events", "faults_on", "finished", "history",
                 "ledger", "now", "policies", "queue", "record", "rnd", "scenario", "seq",
                 "server", "shapes", "stop_on", "stopped", "workers")

    def __init__(self, scn: Scenario, factory: p.ExecutorFactory,
                 stop_on: str | None = None, keep: bool = True) -> None:
        """`stop_on`: stop at the first violation of this property id ("*": of any); `keep`:
        keep the history's entries (a run that only wants the verdict judges them and lets
        them go)."""
        self.scenario = scn
        config = scn.config
        workload = scn.workload
        self.now = 0.0
        self.queue: list[Queued] = []
        self.seq = 0
        self.events = 0
        self.stopped = False
        self.error: str | None = None
        """What the executor raised, or why the run could not go on, if it could not."""
        self.stop_on = stop_on
        self.finished = False
        _, _, env = streams(scn.seed)
        self.rnd = env.random
        self.history = History(config)
        self.shapes = ShapeCounter()
        self._append = _counted(self.history.append if keep else self.history.judge,
                                self.shapes.observe)
        self.record: Callable[[h.Entry], object] = (
            self._append if stop_on is None else self._record_and_stop)
        self.ledger = Ledger({t.name: t.service for t in workload.tools})
        self.faults_on = True
        self.policies = PolicyBook()
        """The policies in force, as the people and the agent's model see them."""
        # The parts reach each other directly, never through the engine, but for the records
        # the server publishes (one per call): the network hands the workers' messages to the
        # server's host, and `published` hands a record to the agents.
        by_args: dict[str, CallRun] = {}
        self.server = server = SimServer(self, factory, config, by_args)
        self.agents = SimulatedAgents(self, server, workload, self.policies, self.ledger,
                                      by_args, self.quiesce, self.finalize)
        beat = workload.heartbeat_interval
        self.workers = [Worker(i, self, server.network, server.accept, by_args, self.ledger,
                               config.lease, HEARTBEAT_INTERVAL if beat is None else beat)
                        for i in range(workload.workers)]

    # -- the clock ------------------------------------------------------------------------------

    def at(self, when: float, fn: Handler, a: Any = None, b: Any = None) -> None:
        seq = self.seq + 1
        self.seq = seq
        heappush(self.queue, (when, seq, fn, a, b))

    def published(self, key: str, status: ToolCallStatus) -> None:
        self.agents.on_record(key, status)

    def _record_and_stop(self, entry: h.Entry) -> None:
        """Record `entry`, and stop the run if it broke the property asked for."""
        found = self._append(entry)
        if found and (self.stop_on == "*" or any(v.property == self.stop_on for v in found)):
            self.stopped = True

    def run(self) -> History:
        """Drive the scenario to quiescence, then judge the eventually-properties. Anything
        the executor raises, and anything it answers outside the protocol, ends the run with
        `error` set: the breach names the event it was handling."""
        queue = self.queue
        pop = heappop
        count = 0
        try:
            self._start()
            while queue and not self.stopped:
                when, _, fn, a, b = pop(queue)
                self.now = when
                count += 1
                fn(a, b)
                if count >= MAX_EVENTS:
                    self.error = (f"the run did not settle: {MAX_EVENTS:,} events by t="
                                  f"{self.now:.3f}")
                    break
        except guard.ProtocolBreach as breach:
            self.error = f"t={self.now:.3f}: {breach}"
        except Exception as error:
            where = traceback.extract_tb(error.__traceback__)[-1]
            self.error = (f"t={self.now:.3f}: {type(error).__name__}: {error} "
                          f"(at {where.filename}:{where.lineno})")
        self.events = count
        return self.history

    def _start(self) -> None:
        w = self.scenario.workload
        self.server.start()
        for tool in w.tools:
            if tool.registered:
                self.set_policy(tool.name, tool.policy, tool.hints)
        for change in w.changes:
            self.at(change.at, self._policy_change, change)
        for fault in self.scenario.faults:
            self.at(fault.at, self._fault, fault)
        for worker in self.workers:
            self.at(self.rnd() * 0.05, worker.start_up)
        self.agents.start()
        self.at(w.window + (HARD_LIMIT if w.limit is None else w.limit), self._hard_stop)

    def _hard_stop(self, _a: object, _b: object) -> None:
        if not self.finished:
            self.quiesce()
            self.at(self.now + SETTLE, self.finalize)

    def quiesce(self) -> None:
        """Stop injecting faults and heal everything, so the run can settle."""
        if not self.faults_on:
            return
        self.faults_on = False
        self.agents.reconcile_crashes = 0
        self.server.late_until = 0.0
        for worker in self.workers:
            worker.settle()

    def finalize(self, _a: object = None, _b: object = None) -> None:
        self.agents.observe_all()
        self.history.finish()
        self.finished = True
        self.stopped = True

    # -- policies -------------------------------------------------------------------------------

    def set_policy(self, tool: str, policy: Any, hints: Any) -> None:
        self.policies.set_policy(tool, policy, hints)
        self.record(h.PolicySet(self.now, tool, policy, hints))
        self.server.feed(p.SetPolicy(self.now, tool, policy, hints))

    def _policy_change(self, change: Any, _b: object) -> None:
        if self.faults_on:
            self.set_policy(change.tool, change.policy, change.hints)

    # -- faults ---------------------------------------------------------------------------------

    def _fault(self, fault: Fault, _b: object) -> None:
        if not self.faults_on:
            return
        kind = fault.kind
        if kind is FaultKind.RESTART:
            if fault.target == WHILE_WAITING and not self.agents.awaiting \
                    and self.now < self.scenario.workload.window + WAIT_FOR_WAITING:
                self.at(self.now + 0.25, self._fault, fault)
            elif fault.extra > 0:
                self.server.crash_armed = True
            else:
                self.server.restart()
        elif kind is FaultKind.OUTAGE:
            until = self.now + fault.duration
            for worker in self.workers:
                worker.pause(until)
        elif kind is FaultKind.RECONCILE_CRASH:
            self.agents.reconcile_crashes += 1
        elif kind is FaultKind.LATE_TIMERS:
            self.server.late_timers(self.now + fault.duration)
        else:
            self.workers[fault.target % len(self.workers)].fault(fault)
