"""What the chaos harness's agents ask for: the tool mix, the policies and their changes, each
call's arguments (how long the run takes, when it writes, whether the tool reports a failure),
and what the person asked to approve a call does.

The tools are the runtime's four demo tools, one per effect class at the start
(`atmostonce.runtime.tools`); policy changes move a tool to another statement of its
policy (approval on or off, a hint instead of a policy, another class) and back, so calls asked
before and after a change coexist (TC-SNAP-1, TC-SNAP-2). Every choice is drawn from a random
stream named after the seed and what it is for, so a seed reproduces what is asked, though not
when (real processes decide that).
"""

from __future__ import annotations

import random
from typing import Any

from atmostonce.runtime.tools import TOOLS
from atmostonce.sim.workload import Person
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig

RETRY_PAUSE = 0.1
"""Seconds a client waits before trying again a call whose answer never came."""

Statement = tuple[ToolPolicy | None, ToolHints | None]
"""What the harness registers for a tool: its policy and its framework hints."""

_E = EffectClass
TOOL_NAMES: tuple[str, ...] = tuple(TOOLS)
INITIAL: dict[str, Statement] = {name: (tool.policy, None) for name, tool in TOOLS.items()}
ALTERNATIVES: dict[str, tuple[Statement, ...]] = {
    "lookup_order": ((None, ToolHints(read_only=True)),
                     (ToolPolicy(_E.READ, requires_approval=True), None)),
    "refund": ((ToolPolicy(_E.IDEMPOTENT_WRITE), None),
               (None, ToolHints(idempotent=True))),
    "cancel_order": ((ToolPolicy(_E.NON_IDEMPOTENT_WRITE, requires_approval=False), None),
                     (None, ToolHints(read_only=False, destructive=True))),
    "notify_customer": ((ToolPolicy(_E.UNCLASSIFIED, requires_approval=False), None),
                        (ToolPolicy(_E.IDEMPOTENT_WRITE), None),
                        (None, ToolHints(destructive=True))),
}
"""Other statements of each tool's policy a change may pick (D-1, D-11, TC-APR-3, TC-APR-4)."""

BOTH = {
    "lookup_order": (ToolPolicy(_E.READ), ToolHints(read_only=False, destructive=True)),
    "refund": (ToolPolicy(_E.IDEMPOTENT_WRITE, requires_approval=True),
               ToolHints(read_only=True)),
    "cancel_order": (ToolPolicy(_E.NON_IDEMPOTENT_WRITE), ToolHints(idempotent=True)),
    "notify_customer": (ToolPolicy(_E.UNCLASSIFIED), ToolHints(read_only=True)),
}
"""Each tool's statement with both a policy and framework hints that disagree with it: the
policy wins (D-1)."""
BOTH_AT_START = 0.35
"""How likely a tool starts with both a policy and hints."""
REGISTERED_LATE = 0.5
"""How likely the tool a run leaves unregistered at the start is registered at the tool
owner's first change; otherwise no policy or hints are ever set for it. Until then its calls
get the session default or unclassified (TC-APR-5)."""
FLOOR = 0.4
"""How likely a session with a default effect keeps it as a floor hints cannot lower (D-22)."""
OWN_DEADLINE = 0.3
"""How likely a call's ask sets its own approval deadline (D-32)."""

REASK = 0.7
"""How likely the model asks a tool again after a failed or unknown record (TC-REC-2)."""
MAX_DEPTH = 2
FAIL = 0.08
"""How likely a run reports a failure of its own (D-3)."""


def registrations(rng: random.Random) -> tuple[dict[str, Statement], str | None]:
    """What each tool registered at the start has, one tool being left out; and that tool
    again if it is registered late (at the tool owner's first change), else None."""
    start = {name: BOTH[name] if rng.random() < BOTH_AT_START else statement
             for name, statement in INITIAL.items()}
    left_out = rng.choice(TOOL_NAMES)
    del start[left_out]
    return start, left_out if rng.random() < REGISTERED_LATE else None


def policy_change(rng: random.Random, tools: list[str]) -> tuple[str, Statement]:
    """One of `tools` and the statement it gets next: another one, or its first one back."""
    tool = rng.choice(tools)
    r = rng.random()
    if r < 0.4:
        return tool, INITIAL[tool]
    if r < 0.6:
        return tool, BOTH[tool]
    return tool, rng.choice(ALTERNATIVES[tool])


def session_default(rng: random.Random) -> tuple[EffectClass | None, bool]:
    """A session's default effect, unset mostly (D-1), and whether hints may lower it (D-22)."""
    if rng.random() >= 0.3:
        return None, True
    return rng.choice(list(EffectClass)), rng.random() >= FLOOR


def own_deadline(rng: random.Random, config: ExecutorConfig) -> float | None:
    """The approval deadline a call's ask sets, if it sets one (D-32): shorter or longer than
    the engine's."""
    if rng.random() >= OWN_DEADLINE:
        return None
    return round(config.approval_deadline * rng.uniform(0.4, 1.6), 3)


def turn_tools(rng: random.Random) -> list[str]:
    r = rng.random()
    count = 1 if r < 0.5 else 2 if r < 0.85 else 3
    return rng.sample(TOOL_NAMES, count)


def arguments(rng: random.Random, number: int, config: ExecutorConfig) -> dict[str, Any]:
    """One call's arguments: mostly short runs; some long enough to meet a fault; a few longer
    than the run timeout, so the attempt is cancelled while the tool goes on (TC-AMO-3) and a
    read or idempotent write is tried max_attempts times."""
    r = rng.random()
    if r < 0.76:
        duration = rng.uniform(0.02, 0.3)
    elif r < 0.92:
        duration = rng.uniform(0.5, 2.0)
    else:
        duration = rng.uniform(config.run_timeout + 0.2, config.run_timeout + 0.8)
    return {"order_id": str(1000 + number % 97), "n": number,
            "duration": round(duration, 3), "write_at": round(rng.uniform(0.0, duration), 3),
            "fail": rng.random() < FAIL}



def person(rng: random.Random) -> Person:
    r = rng.random()
    return (Person.APPROVE if r < 0.55 else Person.REJECT if r < 0.70 else
            Person.MISS if r < 0.78 else Person.LATE if r < 0.85 else
            Person.TWICE if r < 0.95 else Person.FLIP)


def answer_after(rng: random.Random, who: Person, deadline: float) -> float:
    """Seconds from the ask to the first answer: well before the deadline, or after it."""
    if who is Person.LATE:
        return deadline + rng.uniform(0.3, 1.5)
    return rng.uniform(0.05, 0.35 * deadline)
