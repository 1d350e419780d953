"""The naive explorer of `benchmarks/naive_explorer.py` is the same model as `System`.

Both explore a bound completely; every state of each is mapped to its orbit under renaming
workers and reordering calls, written in the naive explorer's snapshot form, and the two sets
of orbits must be equal. The naive explorer is an independent implementation (objects driven
by `transitions` machines), so agreement checks System's compiled tables, interning, memo and
symmetry reduction against the plain reading of the same rules.
"""

from __future__ import annotations

import pytest

from atmostonce.model import layout as s
from atmostonce.model.check import DEFAULT
from atmostonce.model.config import ModelConfig, parse_tools
from atmostonce.model.explorer import Explorer
from atmostonce.model.layout import Call, State
from atmostonce.model.system import System
from benchmarks.naive_explorer import CallSnap, NaiveExplorer, WorldSnap, orbit

END_NAME = {
    s.E_NONE: None, s.E_NOT_REACHED: "not_reached", s.E_RETURNED: "returned",
    s.E_TOOL_FAILED: "tool_failed", s.E_LOST: "worker_lost",
    s.E_LOST_RESTART: "lost_at_restart", s.E_CANCELLED: "cancelled",
}

BOUNDS = {
    "faults=1": DEFAULT.with_(faults=1, policy_changes=0, reconcile_crashes=0,
                              tools=parse_tools("unclassified")),
    "faults=1,policy-change": DEFAULT.with_(workers=1, faults=1,
                                            tools=parse_tools("read,unclassified")),
    "workers=1": DEFAULT.with_(workers=1, policy_changes=0,
                               tools=parse_tools("non_idempotent_write")),
}
"""Small enough for the naive explorer to finish in seconds; together they reach every effect
class (an unclassified tool turns into an idempotent write on a policy change), two workers,
two faults on one path, approvals, re-asks, time-outs, restarts, and the reconcile job crashing
after either of two unknown calls' reports."""


def snapshot_of(system: System, state: State) -> WorldSnap:
    """A System state in the naive explorer's snapshot form."""
    gl = state[: s.NG]
    assert gl[s.JOB] == 0
    n_tools = len(system.config.tools)
    return WorldSnap(
        gl[s.ASK], gl[s.RSKB], gl[s.CR], gl[s.PT], gl[s.RS], gl[s.TO], gl[s.PC], gl[s.JC],
        gl[s.FT],
        tuple(bool(gl[s.TV] >> t & 1) for t in range(n_tools)),
        tuple(s.PLAIN.states[gl[s.TE] >> (2 * t) & 3] for t in range(n_tools)),
        tuple(s.WORKER.states[w] for w in state[s.NG: s.NG + system.workers]),
        tuple(_call_snapshot(system, c) for c in system.calls_of(state)),
    )


def _call_snapshot(system: System, c: Call) -> CallSnap:
    g = c[s.G]
    assert c[s.JOBP] == 0
    assert not g & s.G_KEYBAD
    return CallSnap(
        c[s.T], c[s.POL], c[s.GPOL], s.CALL_TOOL.states[c[s.CS]],
        s.FAILURE_OF_INDEX[c[s.FK]].value if c[s.FK] else None, c[s.NATT], bool(c[s.RCH]),
        s.ATTEMPT.states[c[s.AS]], c[s.AW] if c[s.AW] >= 0 else None,
        tuple((w, s.RUN.states[rs], n) for w, rs, n in system.runs(c[s.RUNS])),
        s.KEYED.states[c[s.EFF]], c[s.ABW] if c[s.ABW] >= 0 else None, c[s.REP],
        bool(c[s.RSK]),
        (bool(g & s.G_ISREASK), s.hands(g), bool(g & s.G_OKD), s.runs_started(g),
         s.record_writes(g), bool(g & s.G_APPROVED), END_NAME[s.last_end(g)],
         bool(g & s.G_HB), bool(g & s.G_DEADLINE)),
    )


def orbits_of_both(config: ModelConfig) -> tuple[set[WorldSnap], set[WorldSnap]]:
    fast = Explorer(System(config), stop_at_first=False)
    result = fast.run()
    assert result.complete
    assert not result.violations
    naive = NaiveExplorer(config)
    assert naive.run().complete
    return ({orbit(snapshot_of(fast.system, st)) for st in fast.states},
            {orbit(st) for st in naive.states})


@pytest.mark.slow
@pytest.mark.parametrize("config", BOUNDS.values(), ids=BOUNDS.keys())
def test_naive_explorer_reaches_the_same_orbits_as_the_system(config: ModelConfig) -> None:
    fast, naive = orbits_of_both(config)
    assert fast == naive, (
        f"{len(fast - naive)} orbits only the system reaches, e.g. {sorted(fast - naive)[:1]}; "
        f"{len(naive - fast)} only the naive explorer reaches, e.g. {sorted(naive - fast)[:1]}"
    )
