"""The fault vocabulary, the profiles that pick from it, and a seed's fault schedule.

A profile names the fault kinds it may inject; swarm testing enables a random non-empty subset
of them per seed, so a campaign also covers schedules where one kind of fault meets no other.
The schedule is drawn from its own random stream, apart from the workload's, so shrinking it
leaves the workload alone.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping
from dataclasses import dataclass

from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig


class FaultKind(enum.Enum):
    CRASH = "crash"
    """A worker process dies (its runs die with it) and comes back after `duration`."""
    PARTITION = "partition"
    """A worker's connection is cut for `duration`: messages are held, not lost."""
    DELAY = "delay"
    """A worker's messages take `extra` seconds longer for `duration` (FIFO kept)."""
    STALL = "stall"
    """The tool run at a worker hangs `extra` seconds longer: a run time-out (TC-AMO-3)."""
    OUTAGE = "outage"
    """No worker asks for work for `duration`: attempts expire unreached."""
    RESTART = "restart"
    """The server restarts (D-8); with `extra` > 0 it dies inside a batch of commands, right
    after a Persist, before the later commands are carried out (D-5); with `target`
    `WHILE_WAITING` it waits until some call waits for approval."""
    RECONCILE_CRASH = "reconcile_crash"
    """The next reconcile run dies after its first send, before reading the reply."""
    LATE_TIMERS = "late_timers"
    """The server's timers run late for `duration`: one that comes due meanwhile fires only at
    its end, after what the server handled in between (a stalled loop, D-32)."""


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault of a schedule: when, what, which worker (by index) and how long or how much."""

    at: float
    kind: FaultKind
    target: int = 0
    duration: float = 0.0
    extra: float = 0.0

    def describe(self) -> str:
        k = self.kind
        if k is FaultKind.CRASH:
            return f"t={self.at:.3f} crash worker w{self.target}, back after {self.duration:.2f}s"
        if k is FaultKind.PARTITION:
            return f"t={self.at:.3f} cut worker w{self.target} off for {self.duration:.2f}s"
        if k is FaultKind.DELAY:
            return (f"t={self.at:.3f} slow link to w{self.target}: +{self.extra:.2f}s for "
                    f"{self.duration:.2f}s")
        if k is FaultKind.STALL:
            return f"t={self.at:.3f} stall the tool run at w{self.target} by {self.extra:.2f}s"
        if k is FaultKind.OUTAGE:
            return f"t={self.at:.3f} no worker polls for {self.duration:.2f}s"
        if k is FaultKind.LATE_TIMERS:
            return (f"t={self.at:.3f} the server's timers run late for {self.duration:.2f}s")
        if k is FaultKind.RESTART:
            mid = " inside a batch, after a Persist" if self.extra > 0 else ""
            wait = " once a call waits for approval" if self.target == WHILE_WAITING else ""
            return f"t={self.at:.3f} restart the server{mid}{wait}"
        return f"t={self.at:.3f} crash the next reconcile run after its first send"


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    kinds: tuple[FaultKind, ...]
    summary: str
    late_timers: bool = False
    """Whether some seeds also get late timers, drawn after every other fault so that the
    schedules drawn before them stay as they were."""


_K = FaultKind
PROFILES: Mapping[str, Profile] = {
    p.name: p for p in (
        Profile("none", (), "no faults: tool failures, approvals, policy changes and re-asks"),
        Profile("crashy", (_K.CRASH, _K.RECONCILE_CRASH), "worker and reconcile crashes"),
        Profile("partitions", (_K.PARTITION, _K.DELAY), "cut and slow worker connections"),
        Profile("timeouts", (_K.STALL, _K.OUTAGE), "run time-outs, queue time-outs and "
                "late timers", late_timers=True),
        Profile("restarts", (_K.RESTART,), "server restarts, some inside a batch"),
        Profile("chaos", (_K.CRASH, _K.PARTITION, _K.DELAY, _K.STALL, _K.OUTAGE, _K.RESTART,
                          _K.RECONCILE_CRASH), "every kind of fault", late_timers=True),
    )
}

# Faults per simulated second of the fault window, for each kind a seed enables.
RATES: Mapping[FaultKind, float] = {
    _K.CRASH: 0.10,
    _K.PARTITION: 0.10,
    _K.DELAY: 0.05,
    _K.STALL: 0.12,
    _K.OUTAGE: 0.03,
    _K.RESTART: 0.05,
    _K.RECONCILE_CRASH: 0.05,
    _K.LATE_TIMERS: 0.05,
}


WHILE_WAITING = 1
"""A restart's `target` when it is timed to strike while a call waits for approval."""
RESTARTS_WHILE_WAITING = 0.3
"""The share of restarts timed that way (D-8 with an approval pending)."""
LATE_TIMER_SEEDS = 0.4
"""The share of a late-timer profile's seeds whose server's timers run late now and then."""


def profile(name: str) -> Profile:
    """The profile called `name`; SpecError naming the known ones otherwise."""
    found = PROFILES.get(name)
    if found is None:
        raise SpecError(f"unknown fault profile {name!r} (known: {', '.join(PROFILES)})")
    return found


def swarm(p: Profile, rng: random.Random) -> tuple[FaultKind, ...]:
    """The kinds this seed enables: a random non-empty subset of the profile's."""
    if not p.kinds:
        return ()
    chosen = tuple(k for k in p.kinds if rng.random() < 0.5)
    return chosen or (p.kinds[rng.randrange(len(p.kinds))],)


def schedule(p: Profile, rng: random.Random, window: float, workers: int,
             config: ExecutorConfig) -> tuple[tuple[FaultKind, ...], tuple[Fault, ...]]:
    """The enabled kinds and the faults of one seed, in time order, within `window` seconds."""
    kinds = swarm(p, rng)
    faults: list[Fault] = []
    for kind in kinds:
        count = _poisson(rng, RATES[kind] * window)
        for _ in range(count):
            at = rng.uniform(0.5, window)
            target = rng.randrange(workers)
            faults.append(_draw(kind, at, target, rng, config))
    if p.late_timers and rng.random() < LATE_TIMER_SEEDS:
        kinds += (FaultKind.LATE_TIMERS,)
        for _ in range(_poisson(rng, RATES[FaultKind.LATE_TIMERS] * window)):
            at = rng.uniform(0.5, window)
            faults.append(_draw(FaultKind.LATE_TIMERS, at, 0, rng, config))
    faults.sort(key=lambda f: (f.at, f.kind.value, f.target))
    return kinds, tuple(faults)


def _draw(kind: FaultKind, at: float, target: int, rng: random.Random,
          config: ExecutorConfig) -> Fault:
    hb = config.heartbeat_timeout
    if kind is FaultKind.CRASH:
        return Fault(at, kind, target, rng.uniform(0.2, 1.5 * hb))
    if kind is FaultKind.PARTITION:
        # Around the lease and the heartbeat timeout: healed before either, between, after.
        return Fault(at, kind, target, rng.uniform(0.2, 2.0 * hb))
    if kind is FaultKind.DELAY:
        return Fault(at, kind, target, rng.uniform(1.0, 2.0 * hb), rng.uniform(0.1, hb * 0.7))
    if kind is FaultKind.STALL:
        return Fault(at, kind, target, 0.0, rng.uniform(0.5, 2.5) * config.run_timeout)
    if kind is FaultKind.OUTAGE:
        return Fault(at, kind, 0, rng.uniform(0.5, 2.5) * config.queue_timeout)
    if kind is FaultKind.LATE_TIMERS:
        # Long enough that an answer after a deadline comes before its timer (D-32).
        return Fault(at, kind, 0, rng.uniform(0.5, 1.0) * config.approval_deadline)
    if kind is FaultKind.RESTART:
        waiting = WHILE_WAITING if rng.random() < RESTARTS_WHILE_WAITING else 0
        return Fault(at, kind, waiting, 0.0, 1.0 if rng.random() < 0.5 else 0.0)
    return Fault(at, kind)


def _poisson(rng: random.Random, mean: float) -> int:
    count = 0
    total = rng.expovariate(1.0) if mean > 0 else float("inf")
    while total < mean:
        count += 1
        total += rng.expovariate(1.0)
    return count
