"""A scenario file's seed as the engine runs it: the workload (sessions, turns, the tools each
turn asks for, every call's runs and its person's answer) and the fault schedule, all drawn up
front from the seed.

Each session, each call and each fault stream has a random stream of its own, named by the
seed and its place, and every duration comes from one uniform number through its
distribution's inverse CDF. So two scenarios that differ in one setting draw the same numbers
wherever that setting plays no part: a sweep compares the same calls meeting the same faults.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

from atmostonce.sim.agents import WATCHDOG
from atmostonce.sim.engine import HARD_LIMIT, Scenario
from atmostonce.sim.faults import WHILE_WAITING, Fault, FaultKind, Profile
from atmostonce.sim.scenario import ScenarioFile, Tool
from atmostonce.sim.workload import CallPlan, Person, RunPlan, SessionPlan, ToolSpec, Workload
from atmostonce.spec.errors import SpecError

SPARES = 16
"""Spare plans per tool, for the calls the model asks again."""
MAX_CALLS = 200_000
"""The most calls a seed may plan: a seed's workload is drawn up front and held whole."""
MAX_FAULTS = 200_000
"""The most faults a seed may expect to draw, over the longest its sessions may take."""
PROFILE = "scenario"
_K = FaultKind


def build(spec: ScenarioFile, seed: int, only: Iterable[int] | None = None) -> Scenario:
    """The scenario of `seed`; `only` keeps just the faults at those schedule indexes."""
    config = spec.executor.config
    agent = spec.agent
    sessions = tuple(_session(spec, seed, s) for s in range(agent.sessions))
    spares = tuple((t.name, tuple(_call(spec, t, _stream(seed, "spare", t.name, i))
                                  for i in range(SPARES))) for t in spec.tools)
    limit = settle_limit(spec)
    workload = Workload(
        tuple(ToolSpec(t.name, t.service, t.policy, t.hints, t.registered) for t in spec.tools),
        sessions, (),
        (), spec.executor.workers, config.fence, agent.arrival,
        spec.executor.heartbeat_interval, limit, spares)
    kinds, faults = schedule(spec, seed, agent.arrival + limit)
    if only is not None:
        keep = set(only)
        faults = tuple(f for i, f in enumerate(faults) if i in keep)
    profile = Profile(PROFILE, kinds, f"the scenario file {spec.path}")
    return Scenario(seed, profile, workload, kinds, faults, config)


def check_size(spec: ScenarioFile) -> None:
    """SpecError when a seed would plan more calls or draw more faults than it can hold."""
    agent = spec.agent
    calls = agent.sessions * agent.turns[1] * min(agent.calls_per_turn[1], len(spec.tools))
    if calls > MAX_CALLS:
        raise SpecError(f"{spec.path}: agent: up to {calls:,} calls per seed (sessions x "
                        f"turns x calls_per_turn); at most {MAX_CALLS:,}: run more seeds "
                        "with fewer sessions instead")
    f = spec.faults
    hours = (agent.arrival + settle_limit(spec)) / 3600
    per_hour = (spec.executor.workers * (f.worker_crashes_per_hour
                                         + f.connection_losses_per_hour)
                + f.server_restarts_per_hour + f.late_timers_per_hour)
    if per_hour * hours > MAX_FAULTS:
        raise SpecError(f"{spec.path}: faults: these rates draw about {per_hour * hours:,.0f} "
                        f"faults per seed over the {hours:,.1f} hours its sessions may take; "
                        f"at most {MAX_FAULTS:,}: lower the rates, or the turns and time-outs "
                        "that make a session long")


def settle_limit(spec: ScenarioFile) -> float:
    """Simulated seconds after the sessions' arrival window by which every call must have its
    record: twice the longest a session can take when every call of every turn waits out its
    approval deadline and every attempt its time-outs, and at least the engine's own limit."""
    c = spec.executor.config
    attempt = c.queue_timeout + 2 * c.run_timeout + c.heartbeat_timeout + c.retry_backoff
    call = c.approval_deadline + c.max_attempts * attempt
    turns = spec.agent.turns[1] + 2  # a call asked again may add two turns
    return max(HARD_LIMIT, 2 * turns * (call + spec.agent.think.at(0.999999) + WATCHDOG))


def _stream(seed: int, *place: object) -> random.Random:
    return random.Random(":".join(("atmostonce", str(seed), "scenario", *map(str, place))))


def _session(spec: ScenarioFile, seed: int, index: int) -> SessionPlan:
    agent = spec.agent
    rng = _stream(seed, "session", index)
    start = agent.arrival * rng.random()
    turns = []
    for turn in range(rng.randint(*agent.turns)):
        low, high = agent.calls_per_turn
        count = rng.randint(min(low, len(spec.tools)), min(high, len(spec.tools)))
        picked = _weighted_sample(rng, spec.tools, count)
        turns.append(tuple(_call(spec, tool, _stream(seed, "call", index, turn, slot))
                           for slot, tool in enumerate(picked)))
    think = tuple(agent.think.at(rng.random()) for _ in range(len(turns) + 4))
    return SessionPlan(f"s{index + 1}", start, agent.default_effect, tuple(turns), think,
                       agent.hints_may_lower)


def _weighted_sample(rng: random.Random, tools: Sequence[Tool], count: int) -> list[Tool]:
    """`count` different tools, each pick in proportion to the weights of those left."""
    left = list(tools)
    picked: list[Tool] = []
    for _ in range(count):
        total = sum(t.weight for t in left)
        point = rng.random() * total
        for i, tool in enumerate(left):
            point -= tool.weight
            if point < 0 or i == len(left) - 1:
                picked.append(left.pop(i))
                break
    return picked


def _call(spec: ScenarioFile, tool: Tool, rng: random.Random) -> CallPlan:
    """One call of `tool`: whether the model asks again, its person's answer, then one run per
    possible attempt (how long, whether it returns, when its write lands)."""
    rnd = rng.random
    approvals = spec.approvals
    reask = rnd() < spec.agent.reask
    u = rnd()
    person = (Person.APPROVE if u < approvals.approve else
              Person.REJECT if u < approvals.approve + approvals.reject else Person.MISS)
    after = approvals.answer_delay.at(rnd())
    config = spec.executor.config
    runs = tuple(RunPlan(tool.duration.at(rnd()), rnd() >= tool.failure_rate, rnd())
                 for _ in range(config.max_attempts))
    if tool.hang_rate > 0:
        runs = tuple(r._replace(duration=config.run_timeout + r.duration)
                     if rnd() < tool.hang_rate else r for r in runs)
    own = None
    if approvals.own_deadline > 0 and rnd() < approvals.own_deadline:
        own = approvals.own_deadline_seconds.at(rnd())
    return CallPlan(tool.name, runs, reask, person, after, 0.0, False, own)


def schedule(spec: ScenarioFile, seed: int, horizon: float
             ) -> tuple[tuple[FaultKind, ...], tuple[Fault, ...]]:
    """The fault kinds with a rate above zero and the faults of one seed up to `horizon`, in
    time order: a Poisson process per worker for crashes and for connection losses, one for
    server restarts. The engine stops injecting them once the sessions are done."""
    f = spec.faults
    workers = spec.executor.workers
    faults: list[Fault] = []
    for target in range(workers):
        for at, u in _arrivals(seed, "crash", target, f.worker_crashes_per_hour, horizon):
            faults.append(Fault(at, _K.CRASH, target, f.worker_downtime.at(u)))
        for at, u in _arrivals(seed, "cut", target, f.connection_losses_per_hour, horizon):
            faults.append(Fault(at, _K.PARTITION, target, f.connection_loss_duration.at(u)))
    waits = _stream(seed, "faults", "restart", "waiting")
    for at, u in _arrivals(seed, "restart", 0, f.server_restarts_per_hour, horizon):
        waiting = WHILE_WAITING if waits.random() < f.restarts_while_waiting else 0
        faults.append(Fault(at, _K.RESTART, waiting, 0.0,
                            1.0 if u < f.restarts_mid_batch else 0.0))
    for at, u in _arrivals(seed, "late timers", 0, f.late_timers_per_hour, horizon):
        faults.append(Fault(at, _K.LATE_TIMERS, 0, f.late_timer_duration.at(u)))
    faults.sort(key=lambda fault: (fault.at, fault.kind.value, fault.target))
    kinds = tuple(k for k, rate in ((_K.CRASH, f.worker_crashes_per_hour),
                                    (_K.PARTITION, f.connection_losses_per_hour),
                                    (_K.RESTART, f.server_restarts_per_hour),
                                    (_K.LATE_TIMERS, f.late_timers_per_hour)) if rate > 0)
    return kinds, tuple(faults)


def _arrivals(seed: int, kind: str, target: int, per_hour: float, horizon: float
              ) -> list[tuple[float, float]]:
    """The times of a Poisson process of `per_hour` from 0.5 s to `horizon`, each with a
    uniform number for its size. A higher rate moves the same faults earlier and adds some."""
    if per_hour <= 0:
        return []
    rng = _stream(seed, "faults", kind, target)
    scale = 3600.0 / per_hour
    out = []
    at = 0.5 + rng.expovariate(1.0) * scale
    while at < horizon:
        out.append((at, rng.random()))
        at += rng.expovariate(1.0) * scale
    return out
