"""Partial-order reduction: in a state where one call's enabled steps commute with everything
the rest of the system can do before that call moves, explore only that call's steps (an
ample set) and let the other orders be implied; every verdict is kept.

The actors are the calls (one each) and the environment (faults, asks, worker events, policy
changes, the reconcile job). `ample` picks, from a state's full successor list, the enabled
steps E_j of one call j that pass the conditions below, or returns the full list. The choice
depends on the state alone, so it combines with symmetry, fingerprints and any partitioning.

Soundness conditions (Clarke, Grumberg and Peled's ample sets; Valmari's stubborn sets):

C0, non-empty: E_j holds at least one step.

C1, persistence: along any path from the state on which j does not move, no step dependent on
a step of E_j can occur, and no step enables, disables or changes a step of j. The independence
relation, from what each step of the model reads and writes (`call_steps`, `worker_events`,
`system`), over steps of different actors:
  * a call's step writes only its own call, plus a budget or its tool's ledger count as deltas;
    REASK (the reask budget, the tool's policy version, a new call) and TIME_OUT (the time-out
    and fault budgets, which faults share) are never in an ample set;
  * GO, HEARTBEAT and FINISH read the state of the worker the call names; crashes,
    disconnections, reconnections, heartbeat timeouts and rejoins write it, and change every
    call naming it; so a call naming a worker (or about to take one) is a candidate only when no
    fault on a worker can happen any more (faults or crash and partition budgets spent) and
    every worker it names is up (no worker event is pending on it);
  * a server restart changes every call with an attempt out and is enabled by calls out or
    waiting: no candidate while a restart can still happen;
  * HAND reads which workers are idle (every worker's state, and the workers every call keeps
    busy or names) and competes with other calls' hand-outs; a queued call, a hand-out, or a
    step that changes what the call keeps busy, names, or leaves running after its record, is a
    candidate only when no other call can ever hand out an attempt (none in flight, none queued,
    none that may be asked again, no asks left) and, for a queued call, every worker is up and
    no other call names a worker;
  * APPLY reads and writes its tool's ledger count: a candidate only when no other call of
    the tool has a run or can get one;
  * a policy change is enabled while a call of the tool is in flight (and, in the mutant that
    drops snapshots, rewrites those calls): with changes left, a candidate's steps must keep
    the call in flight and the model must keep snapshots;
  * the reconcile job runs only when no call is in flight, and reads and writes a recorded
    call's record, failure kind, reports and ghost bits: a candidate in flight keeps it from
    moving; a recorded candidate (whose runs go on after its record) must have no attempt
    scheduled and steps that leave those fields alone (not so in the mutant where a late
    result overwrites the record).

C2, invisibility: the always-properties and the witnesses of sometimes-properties are
per-call predicates, except the double run's witness, which pairs two calls of one tool; a
step that changes a call's part in a double run is visible, so it is never in an ample set. A
per-call predicate needs no more: if a state where call i is bad (or witnesses) is reachable
by a path on which j does not move, then j's state there is its state here (so this state
already shows it when i = j), and after j's step, which commutes with the path, call i is
unchanged. A transition's note is carried by an independent transition unchanged.
Quiescent states (where the eventually-properties are checked): E_j holds a fair step, which
stays enabled along any path on which j does not move, so no quiescent state is reached by
such a path: every quiescent state of the full graph is visited. The explorer decides
quiescence from the full successor list, not the ample one.

C3, cycle proviso for breadth-first search: a state whose ample successor does not lower the
rank is expanded fully (the explorer does it), so every cycle of the reduced graph holds a
fully expanded state. The unmutated model's rank falls on every edge (the explorer checks it),
so the proviso never fires there; in a mutant with a cycle, the reduced graph keeps a cycle
and the rank check finds it.

What POR does not keep: counterexamples and witnesses are shortest in the reduced graph, which
may be longer than the full graph's shortest; the state, transition and quiescent counts.
"""

from __future__ import annotations

from typing import Final

from atmostonce.model.layout import (
    A_NONE,
    A_QUEUED,
    ABW,
    AS,
    ASK,
    AW,
    C_FAILED,
    C_UNKNOWN,
    CR,
    CS,
    FK,
    FT,
    GPOL,
    NG,
    PC,
    PT,
    RECORD_OF_STATE,
    REP,
    RS,
    RSK,
    RSKB,
    RUNS,
    TO,
    W_UP,
    Call,
    G,
    State,
    T,
)
from atmostonce.model.system import Successor, System
from atmostonce.spec.step_kinds import StepKind

REDUCTIONS: Final = ("none", "por")
MUTANTS: Final = ("faults_independent",)
"""A deliberately broken reduction the comparison test must catch: `faults_independent` treats
a call's steps on a worker as independent of crashes, disconnections and server restarts."""

ENV_KINDS: Final = frozenset({
    StepKind.ASK, StepKind.CHANGE_POLICY, StepKind.CRASH, StepKind.DISCONNECT,
    StepKind.RECONNECT, StepKind.DETECT, StepKind.REJOIN, StepKind.RESTART,
    StepKind.RECONCILE, StepKind.RECONCILE_CRASH,
})
WORKER_KINDS: Final = frozenset({StepKind.RECONNECT, StepKind.DETECT, StepKind.REJOIN})
"""A worker's own events once faults are spent (crashes and disconnections are faults)."""
JOB_KINDS: Final = frozenset({StepKind.RECONCILE, StepKind.RECONCILE_CRASH})
NEVER_AMPLE: Final = frozenset({StepKind.TIME_OUT, StepKind.REASK})
_INFO_BUSY_NAMED: Final = (0, 1, 2, 4)
"""Fields of `Interning._call_info` other calls' hand-outs read: busy, abandoned, named,
orphan (in flight, field 3, is read only by policy changes and the reconcile job)."""


class Reduction:
    """Ample sets for one system; `ample` is called with a state and its full successors."""

    def __init__(self, system: System, mutant: str | None = None) -> None:
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError(f"unknown reduction mutant {mutant!r}")
        self.system = system
        self.mutant = mutant
        self.base = NG + system.workers
        self.reduced = 0
        """States expanded with a proper ample set (for the benchmark's report)."""
        self._marks: dict[int, frozenset[str]] = {}
        self._names: dict[Call, frozenset[int]] = {}
        self._summaries: dict[tuple[int, tuple[str, ...], tuple[int, ...]],
                              tuple[bool, bool, bool, bool] | None] = {}

    def ample(self, state: State, succs: list[Successor]) -> list[Successor]:
        """A persistent, invisible subset of `succs` holding a fair step, or `succs` itself:
        the smallest that qualifies of the steps of one call, of one worker's events, or of
        the reconcile job."""
        gl = state[:NG]
        if gl[RS] > 0 and gl[FT] > 0 and self.mutant != "faults_independent":
            return succs  # a restart may strike any call with an attempt out or waiting
        actors: dict[tuple[str, int], list[Successor]] = {}
        for succ in succs:
            kind = succ.label[0]
            if kind in WORKER_KINDS:
                key = ("worker", succ.label[1])
            elif kind in JOB_KINDS:
                key = ("job", 0)
            elif kind in ENV_KINDS:
                continue
            else:
                key = ("call", succ.label[1])
            actors.setdefault(key, []).append(succ)
        if not actors:
            return succs
        moving = {j for what, j in actors if what == "call"}
        best: list[Successor] | None = None
        for (what, j), steps in sorted(actors.items()):
            if len(steps) >= len(succs) or (best is not None and len(steps) >= len(best)):
                continue
            if not any(s.fair for s in steps):
                continue
            if what == "call":
                ok = self._isolated(state, j, steps)
            elif what == "worker":
                ok = self._worker_isolated(state, j, steps, moving)
            else:
                ok = self._job_isolated(state)
            if ok:
                best = steps
        if best is None:
            return succs
        self.reduced += 1
        return best

    def _isolated(self, state: State, j: int, steps: list[Successor]) -> bool:
        """Whether call `j`'s enabled `steps` meet C1 and C2 in `state` (C0 holds: not empty)."""
        system = self.system
        base = self.base
        gl = state[:NG]
        ids = state[base:]
        cid = ids[j]
        c = system.call(cid)
        key = (cid, tuple(succ.label[0] for succ in steps),
               tuple(succ.state[base + j] for succ in steps))
        summary = self._summaries.get(key)
        if summary is None:
            summary = self._summaries[key] = self._summary(c, cid, steps, base + j)
        if summary is None:
            return False
        changes_flight, changes_workers, hands, applies = summary
        if gl[PC] > 0 and (changes_flight or not system.choices.snapshot_policy):
            return False
        refs = self._named(c)
        if refs or hands:
            if gl[FT] > 0 and (gl[CR] > 0 or gl[PT] > 0) and self.mutant != "faults_independent":
                return False
            ws = state[NG:base]
            if any(ws[w] != W_UP for w in refs):
                return False
            if hands and any(st != W_UP for st in ws):
                return False
        if hands or changes_workers:
            if gl[ASK] > 0:
                return False
            for k, other in enumerate(ids):
                if k == j:
                    continue
                o = system.call(other)
                if _may_hand(o, gl[RSKB]) or (hands and self._named(o)):
                    return False
        if applies:
            tool = c[T]
            for k, other in enumerate(ids):
                if k == j:
                    continue
                o = system.call(other)
                if o[T] == tool and (system.runs(o[RUNS]) or _may_hand(o, gl[RSKB])):
                    return False
        return True

    def _summary(self, c: Call, cid: int, steps: list[Successor],
                 at: int) -> tuple[bool, bool, bool, bool] | None:
        """What call `c`'s `steps` (its new id at index `at` of each next state) do, as far as
        the conditions read it, which depends on the call and its steps alone (memoised):
        None when a step is never ample (a kind so, a visible step, or a recorded call's
        step touching what the reconcile job reads); else whether a step takes the call in
        or out of flight, whether one changes what it keeps busy or names, whether it may
        hand out (queued), whether one applies an effect."""
        system = self.system
        recorded = c[CS] in RECORD_OF_STATE
        if recorded and c[AS] != A_NONE:
            return None
        info = system._info[cid]
        marks = self._marks_of(cid)
        hands = c[AS] == A_QUEUED
        changes_flight = changes_workers = applies = False
        for succ in steps:
            kind = succ.label[0]
            if kind in NEVER_AMPLE:
                return None
            new = succ.state[at]
            if recorded and _judged(system.call(new)) != _judged(c):
                return None
            if self._marks_of(new) != marks:
                return None
            new_info = system._info[new]
            if new_info[3] != info[3]:
                changes_flight = True
            if any(new_info[f] != info[f] for f in _INFO_BUSY_NAMED):
                changes_workers = True
            if kind == StepKind.HAND:
                hands = True
            elif kind == StepKind.APPLY:
                applies = True
        return changes_flight, changes_workers, hands, applies

    def _worker_isolated(self, state: State, w: int, steps: list[Successor],
                         moving: set[int]) -> bool:
        """Whether worker `w`'s events (detect, reconnect, rejoin) meet C1 and C2: no fault
        or restart can happen; the calls naming `w` name no other worker and have no step of
        their own (so only these events change them); a reconnect or rejoin, which brings
        `w` up (so it joins the idle workers hand-outs read), happens when no call can hand
        out; a call naming `w` is not queued (the only state in which others' steps can
        enable a step of it); with policy changes left no call leaves flight; no call's part
        in a double run changes; and a recorded call keeps what the reconcile job reads."""
        system = self.system
        base = self.base
        gl = state[:NG]
        if gl[FT] > 0 and (gl[CR] > 0 or gl[PT] > 0 or gl[TO] > 0):
            return False
        if gl[PC] > 0 and not system.choices.snapshot_policy:
            return False  # the mutant's policy change rewrites calls naming `w`
        ids = state[base:]
        brings_up = any(succ.label[0] != StepKind.DETECT for succ in steps)
        naming: list[int] = []
        for k, cid in enumerate(ids):
            c = system.call(cid)
            refs = self._named(c)
            if w in refs:
                if refs != {w} or k in moving or c[AS] == A_QUEUED:
                    return False  # a queued call gains hand-outs as others free workers
                naming.append(k)
        for succ in steps:
            new_ids = succ.state[base:]
            for k in naming:
                old, new = ids[k], new_ids[k]
                if old == new:
                    continue
                c, n = system.call(old), system.call(new)
                if gl[PC] > 0 and (system._info[old][3] != system._info[new][3]
                                   or not system.choices.snapshot_policy):
                    return False
                if self._marks_of(old) != self._marks_of(new):
                    return False
                if c[CS] in RECORD_OF_STATE and _judged(c) != _judged(n):
                    return False
        return not brings_up or not (
            gl[ASK] > 0 or any(_may_hand(system.call(cid), gl[RSKB]) for cid in ids))

    def _job_isolated(self, state: State) -> bool:
        """Whether the reconcile job's steps meet C1 and C2. The job runs when no call is in
        flight and writes the reports and ghost bits of unknown calls; before it moves, no
        call may come into flight (no asks left, no call that may be asked again, no
        attempt scheduled after a record) and no late result may rewrite a record (only the
        mutant does). Runs going on after their records, and worker events, change a
        recorded call's runs alone, which the job neither reads nor writes."""
        system = self.system
        gl = state[:NG]
        if gl[ASK] > 0 or system.choices.late_result_overwrites:
            return False
        return not any(_may_hand(system.call(cid), gl[RSKB]) for cid in state[self.base:])

    def _named(self, c: Call) -> frozenset[int]:
        """The workers a call names: its attempt's, its abandoned run's, its runs'."""
        hit = self._names.get(c)
        if hit is None:
            named = {w for w, _, _ in self.system.runs(c[RUNS])}
            if c[AW] >= 0:
                named.add(c[AW])
            if c[ABW] >= 0:
                named.add(c[ABW])
            hit = self._names[c] = frozenset(named)
        return hit

    def _marks_of(self, cid: int) -> frozenset[str]:
        """The call's part in a double run, the one witness that pairs two calls (C2)."""
        hit = self._marks.get(cid)
        if hit is None:
            c = self.system.call(cid)
            truth = self.system.truth[c[T]][c[GPOL]]
            marks: set[str] = set()
            if not truth.retries_allowed and self.system.runs(c[RUNS]):
                marks.add("orphan" if c[CS] in RECORD_OF_STATE else "running")
            hit = self._marks[cid] = frozenset(marks)
        return hit


def _judged(c: Call) -> tuple[int, ...]:
    """What the reconcile job reads and writes of a recorded call: record, failure kind,
    reports, ghost bits and attempt state. A recorded call's runs may finish or apply while
    the job runs when its steps leave these alone."""
    return c[CS], c[FK], c[REP], c[G], c[AS]




def _may_hand(c: Call, reasks_left: int) -> bool:
    """Whether a call can ever hand out an attempt again: in flight, an attempt scheduled,
    or it may be asked again (a new call)."""
    if c[CS] not in RECORD_OF_STATE or c[AS] != A_NONE:
        return True
    return reasks_left > 0 and c[CS] in (C_FAILED, C_UNKNOWN) and not c[RSK]
