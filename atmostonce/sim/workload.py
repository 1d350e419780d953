"""A seed's workload: the tools and their services, the sessions the agent runs, what the model
asks in each turn, how each tool run behaves, what people answer, and the policy changes.

Everything is drawn up front from the workload's own random stream, so the same seed gives the
same workload whatever the fault schedule does to the run; calls the model asks again draw
from a pool of spare plans, taken in order.
"""

from __future__ import annotations

import enum
import math
import random
from dataclasses import dataclass, replace
from typing import NamedTuple

from atmostonce.check.history.services import Service
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    service: Service
    policy: ToolPolicy | None
    hints: ToolHints | None
    registered: bool = True
    """False for a tool the workers run but no policy or hints are ever set for: its calls
    get the session default or unclassified (TC-APR-5)."""


_E = EffectClass
CATALOGUE: tuple[ToolSpec, ...] = (
    ToolSpec("search_docs", Service.NONE, ToolPolicy(_E.READ), None),
    ToolSpec("lookup_order", Service.NONE, None, ToolHints(read_only=True)),
    ToolSpec("update_address", Service.KEYED, ToolPolicy(_E.IDEMPOTENT_WRITE), None),
    ToolSpec("refund", Service.KEYED, ToolPolicy(_E.IDEMPOTENT_WRITE, True), None),
    ToolSpec("tag_ticket", Service.KEYED, None, ToolHints(idempotent=True)),
    ToolSpec("cancel_order", Service.PLAIN, ToolPolicy(_E.NON_IDEMPOTENT_WRITE), None),
    ToolSpec("send_email", Service.PLAIN, ToolPolicy(_E.NON_IDEMPOTENT_WRITE, False), None),
    ToolSpec("post_comment", Service.PLAIN, None, ToolHints(read_only=False)),
    ToolSpec("run_script", Service.PLAIN, None, None),
    # A policy and framework metadata that disagree: the policy wins (D-1).
    ToolSpec("archive_ticket", Service.KEYED, ToolPolicy(_E.IDEMPOTENT_WRITE),
             ToolHints(read_only=True)),
    ToolSpec("close_account", Service.PLAIN, ToolPolicy(_E.NON_IDEMPOTENT_WRITE, False),
             ToolHints(idempotent=True)),
    ToolSpec("fetch_invoice", Service.NONE, ToolPolicy(_E.READ, True),
             ToolHints(read_only=False, destructive=True)),
)


class Person(enum.Enum):
    """What the person asked to approve a call does."""

    APPROVE = "approve"
    REJECT = "reject"
    MISS = "miss"
    """Never answers: the deadline rejects the call."""
    LATE = "late"
    """Approves after the deadline passed."""
    TWICE = "twice"
    """Approves, then approves again."""
    FLIP = "flip"
    """Approves, then rejects."""


class RunPlan(NamedTuple):
    """How one run of a tool behaves: how long, whether it returns, when a write applies (the
    fraction of the run after which it reaches its service). A named tuple: one is drawn for
    every possible attempt of every call, and tuples are cheap to make."""

    duration: float
    ok: bool
    apply_at: float


class CallPlan(NamedTuple):
    """What the model asks of one call and how it goes; a named tuple, like `RunPlan`: one is
    drawn for every call a workload may ask."""

    tool: str
    runs: tuple[RunPlan, ...]
    reask: bool
    """Whether the model asks again after a failed or unknown record."""
    person: Person
    answer_after: float
    second_after: float
    stray: bool
    """Someone answers although the call needs no approval (D-7)."""
    deadline: float | None = None
    """The call's own approval deadline, set by its ask (D-32); None: none."""


@dataclass(frozen=True, slots=True)
class SessionPlan:
    session_id: str
    start: float
    default_effect: EffectClass | None
    turns: tuple[tuple[CallPlan, ...], ...]
    think: tuple[float, ...]
    hints_may_lower: bool = True
    """D-22: false keeps the default effect as a floor framework metadata cannot lower."""


@dataclass(frozen=True, slots=True)
class PolicyChange:
    at: float
    tool: str
    policy: ToolPolicy | None
    hints: ToolHints | None


@dataclass(frozen=True, slots=True)
class Workload:
    tools: tuple[ToolSpec, ...]
    sessions: tuple[SessionPlan, ...]
    changes: tuple[PolicyChange, ...]
    spares: tuple[CallPlan, ...]
    workers: int
    fence: bool
    window: float
    """The time within which sessions start and faults strike."""
    heartbeat_interval: float | None = None
    """Seconds between a worker's heartbeats while a tool runs; None: the workers'
    `HEARTBEAT_INTERVAL`."""
    limit: float | None = None
    """Simulated seconds after the window by which the run must have settled; None: the
    engine's `HARD_LIMIT`."""
    spares_by_tool: tuple[tuple[str, tuple[CallPlan, ...]], ...] = ()
    """Spare plans of the calls the model asks again, for tools that have their own (a
    scenario file's tools, each with its own durations and failure rate); other tools take
    `spares`."""


def executor_config(fence: bool) -> ExecutorConfig:
    """The executor's options in the simulation: short timeouts so that every timer matters
    within a run; the lease is shorter than the heartbeat timeout (D-12)."""
    return ExecutorConfig(max_attempts=3, retry_backoff=0.3, queue_timeout=5.0, run_timeout=8.0,
                          heartbeat_timeout=6.0, lease=3.0, approval_deadline=10.0, fence=fence)


class Odds(NamedTuple):
    """A seed's chances of the rarer input shapes, drawn once per seed (swarm-style: some seeds
    have none of a shape, others much of it)."""

    hang: float
    """That a call's first two runs hang past the run timeout, so a retried call makes a
    third attempt (TC-REC-RETRY)."""
    own_deadline: float
    """That a call's ask sets its own approval deadline (D-32)."""


UNREGISTERED_SEEDS = 0.4
"""Seeds whose workers also run one or two tools no policy or hints are set for (TC-APR-5)."""
HANG_SEEDS = 0.5
DEADLINE_SEEDS = 0.5
FLOOR = 0.4
"""Sessions with a default effect that keep it as a floor framework metadata cannot lower
(D-22)."""


def draw(rng: random.Random) -> Workload:
    """A seed's workload, everything drawn from `rng` up front."""
    fence = rng.random() < 0.3
    config = executor_config(fence)
    count = rng.randint(5, 8)
    tools = list(rng.sample(CATALOGUE, count))
    names = [t.name for t in tools]
    if rng.random() < UNREGISTERED_SEEDS:
        others = [t for t in CATALOGUE if t.name not in names]
        tools += [replace(t, registered=False) for t in rng.sample(others, rng.randint(1, 2))]
    pool = [t.name for t in tools]
    odds = Odds(rng.uniform(0.05, 0.2) if rng.random() < HANG_SEEDS else 0.0,
                rng.uniform(0.1, 0.5) if rng.random() < DEADLINE_SEEDS else 0.0)
    window = 30.0
    sessions = []
    for s in range(rng.randint(12, 20)):
        turns = []
        for _ in range(rng.randint(2, 6)):
            picked = rng.sample(pool, min(len(pool), _calls_in_turn(rng)))
            turns.append(tuple([_call(rng, name, config, odds) for name in picked]))
        default = rng.choice(list(EffectClass)) if rng.random() < 0.3 else None
        floor = default is not None and rng.random() < FLOOR
        sessions.append(SessionPlan(f"s{s + 1}", rng.uniform(0.0, window / 3), default,
                                    tuple(turns),
                                    tuple([rng.uniform(0.1, 1.0) for _ in range(len(turns) + 4)]),
                                    not floor))
    changes = tuple(sorted(
        (PolicyChange(rng.uniform(1.0, window), *_policy(rng, rng.choice(names)))
         for _ in range(rng.randint(0, 4))),
        key=lambda c: c.at))
    spares = tuple([_call(rng, "", config, odds) for _ in range(16)])
    return Workload(tuple(tools), tuple(sessions), changes, spares, rng.randint(2, 4), fence,
                    window)


def _calls_in_turn(rng: random.Random) -> int:
    r = rng.random()
    return 1 if r < 0.5 else 2 if r < 0.85 else 3


def _call(rng: random.Random, tool: str, config: ExecutorConfig, odds: Odds) -> CallPlan:
    rnd = rng.random
    log = math.log
    runs = []
    hangs = 2 if rnd() < odds.hang else 0
    for i in range(config.max_attempts):
        duration = 0.02 - 0.6 * log(1.0 - rnd())
        if i < hangs:
            duration = config.run_timeout + 0.5 + 3.0 * rnd()
        elif duration > 4.0:
            duration = 4.0
        runs.append(RunPlan(duration, rnd() < 0.9, rnd()))
    r = rnd()
    person = (Person.APPROVE if r < 0.55 else Person.REJECT if r < 0.70 else
              Person.MISS if r < 0.80 else Person.LATE if r < 0.85 else
              Person.TWICE if r < 0.95 else Person.FLIP)
    own = 2.0 + 14.0 * rnd() if rnd() < odds.own_deadline else None
    deadline = config.approval_deadline if own is None else own
    if person is Person.LATE:
        after = deadline + rng.uniform(0.2, 4.0)
    else:
        after = 0.1 + (0.8 * deadline - 0.1) * rnd()
    return CallPlan(tool, tuple(runs), rnd() < 0.7, person, after, 3.0 * rnd(), rnd() < 0.03,
                    own)


def _policy(rng: random.Random, tool: str) -> tuple[str, ToolPolicy | None, ToolHints | None]:
    """A policy change: a policy (for half of them one that sets its own approval deadline,
    D-32, spread by `r` itself so that the seed's later draws stay where they were), hints,
    or neither."""
    r = rng.random()
    if r < 0.7:
        approval = rng.choice((None, None, True, False))
        own = 2.0 + 14.0 * r / 0.35 if r < 0.35 else None
        return tool, ToolPolicy(rng.choice(list(EffectClass)), approval, own), None
    if r < 0.85:
        return tool, None, ToolHints(read_only=rng.choice((True, False)))
    return tool, None, None
