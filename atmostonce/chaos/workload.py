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

REASK = 0.7
"""How likely the model asks a tool again after a failed or unknown record (TC-REC-2)."""
MAX_DEPTH = 2
FAIL = 0.08
"""How likely a run reports a failure of its own (D-3)."""


def policy_change(rng: random.Random) -> tuple[str, Statement]:
    """A tool and the statement it gets next: another one, or its first one back."""
    tool = rng.choice(TOOL_NAMES)
    if rng.random() < 0.5:
        return tool, INITIAL[tool]
    return tool, rng.choice(ALTERNATIVES[tool])


def session_default(rng: random.Random) -> EffectClass | None:
    """A session's default effect: unset mostly (D-1)."""
    return rng.choice(list(EffectClass)) if rng.random() < 0.3 else None


def turn_tools(rng: random.Random) -> list[str]:
    r = rng.random()
    count = 1 if r < 0.5 else 2 if r < 0.85 else 3
    return rng.sample(TOOL_NAMES, count)


def arguments(rng: random.Random, number: int, config: ExecutorConfig) -> dict[str, Any]:
    """One call's arguments: mostly short runs; some long enough to meet a fault; a few longer
    than the run timeout, so the attempt is cancelled while the tool goes on (TC-AMO-3)."""
    r = rng.random()
    if r < 0.78:
        duration = rng.uniform(0.02, 0.3)
    elif r < 0.95:
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
