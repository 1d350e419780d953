"""Breadth-first exhaustive exploration with symmetry reduction, property checks on every state,
witnesses for sometimes-properties, a rank check on every edge (no cycles) and quiescent-state
checks for the eventually-properties.

Breadth-first order makes every counterexample and witness a shortest one.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from atmostonce.model.layout import Label, State
from atmostonce.model.machines import ALL_MACHINES
from atmostonce.model.por import REDUCTIONS, Reduction
from atmostonce.model.properties import ModelViolation, Properties
from atmostonce.model.system import Successor, System
from atmostonce.model.visited import AUTO_EXACT_LIMIT, MODES
from atmostonce.spec.properties import PropertyId


@dataclass(frozen=True)
class Finding:
    """A violation or a witness: the property, what happened, and where (the state reached by
    `label` from state number `source`, or state number `target` itself)."""

    property: str
    message: str
    target: int
    source: int = -1
    label: Label | None = None
    successor: State | None = None
    noted: bool = False


@dataclass
class Result:
    """What one exploration established, with everything the reports need."""

    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    quiescent: int = 0
    complete: bool = True
    stopped_reason: str = ""
    violations: list[Finding] = field(default_factory=list)
    witnesses: dict[str, Finding] = field(default_factory=dict)
    unwitnessed: list[str] = field(default_factory=list)
    fired: set[tuple[str, str, str]] = field(default_factory=set)
    never_fired: list[tuple[str, str, str]] = field(default_factory=list)
    action_counts: dict[str, int] = field(default_factory=dict)
    visited: str = "exact"
    """How the visited states were kept at the end: `exact` or `fingerprint`."""
    processes: int = 1
    """The processes that explored (a parallel check done in its warm-up used one)."""

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    @property
    def ok(self) -> bool:
        return self.complete and not self.violations and not self.unwitnessed


Progress = Callable[[int, int, int, float], None]


def all_edges(cancel_records_failed: bool = True) -> set[tuple[str, str, str]]:
    """Every component edge; an edge that needs D-4's other choice only when it is declared."""
    return {(m.name, src, e.trigger) for m in ALL_MACHINES for e in m.edges for src in e.sources
            if cancel_records_failed or "cancel_records_failed" not in e.conditions}


class Explorer:
    """Explores every reachable state of one system and keeps the search tree for traces."""

    def __init__(
        self,
        system: System,
        *,
        stop_at_first: bool = True,
        max_states: int | None = None,
        progress: Progress | None = None,
        progress_every: float = 0.2,
        goal: Callable[[State], bool] | None = None,
        max_depth: int | None = None,
        visited: str = "exact",
        symmetry: bool = True,
        reduction: str = "none",
        reduction_mutant: str | None = None,
    ) -> None:
        if visited not in MODES:
            raise ValueError(f"visited must be one of {', '.join(MODES)}, got {visited!r}")
        self.system = system
        self.visited = visited
        self.canonical: Callable[[State], State] = (system.canonical if symmetry
                                                     else _unchanged)
        """The representative the explorer stores: the symmetry-reduced canonical form, or
        the state itself with `symmetry=False` (to check the reduction keeps every verdict)."""
        self.properties = Properties(system)
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {', '.join(REDUCTIONS)}, "
                             f"got {reduction!r}")
        self.reduction: Reduction | None = (Reduction(system, reduction_mutant)
                                            if reduction == "por" else None)
        """Partial-order reduction (`por`), or None to expand every state fully."""
        self.stop_at_first = stop_at_first
        self.max_states = max_states
        self.progress = progress
        self.progress_every = progress_every
        self.goal = goal
        self.max_depth = max_depth
        self.goal_found: int | None = None
        self.states: list[State] = []
        self.parent = array("l")
        self.labels: list[Label | None] = []
        self.fingerprints = array("q")
        """With fingerprints: each state's, by number, so that `path` can replay to it."""

    def run(self) -> Result:
        system = self.system
        props = self.properties
        result = Result()
        started = time.monotonic()
        canonical = self.canonical
        successors = system.successors
        check = props.violations
        witness = props.witnessed
        rank = props.rank
        ample = self.reduction.ample if self.reduction is not None else None
        unwitnessed = set(props.wanted)

        init = canonical(system.initial())
        fingerprinting = self.visited == "fingerprint"
        index: dict[object, int] = {hash(init) if fingerprinting else init: 0}
        fps = self.fingerprints
        if fingerprinting:
            fps.append(hash(init))
        auto = self.visited == "auto"
        label_memo: dict[Label, Label] = {}
        states = self.states
        parent = self.parent
        labels = self.labels
        ranks = array("q")
        states.append(init)
        parent.append(-1)
        labels.append(None)
        ranks.append(props.rank(init))
        actions: dict[str, int] = {}

        suspicious: list[tuple[int, int, Successor]] = []

        def record(found: list[ModelViolation], target: int, source: int = -1,
                   successor: Successor | None = None, noted: bool = False) -> None:
            known = {v.property for v in result.violations}
            for v in found:
                if v.property not in known:
                    known.add(v.property)
                    result.violations.append(Finding(
                        v.property, f"call {v.call}: {v.message}" if v.call >= 0 else v.message,
                        target, source, successor.label if successor else None,
                        successor.state if successor else None, noted))

        found = check(init)
        if found:
            record(found, 0)
        for pid in witness(init) & unwitnessed:
            result.witnesses[pid] = Finding(pid, "", 0)
            unwitnessed.discard(pid)

        depth_end = 1
        depth = 0
        next_report = started + self.progress_every
        transitions = 0
        i = 0
        stop = False
        while i < len(states) and not stop:
            if i == depth_end:
                depth += 1
                depth_end = len(states)
                if auto and len(states) > AUTO_EXACT_LIMIT:
                    auto = False
                    fingerprinting = True
                    index = {hash(st): j for st, j in index.items()}
                    fps.extend(hash(st) for st in states)
                    for k in range(i):
                        states[k] = ()
                if self.max_depth is not None and depth >= self.max_depth:
                    result.complete = False
                    result.stopped_reason = f"stopped at depth {self.max_depth}"
                    break
            s = states[i]
            r = ranks[i]
            fair_enabled = False
            chosen = successors(s)
            if ample is not None:
                chosen = self._reduced(r, chosen, ample(s, chosen))
            for succ in chosen:
                transitions += 1
                t = canonical(succ.state)
                if t == s:
                    continue
                if succ.fair:
                    fair_enabled = True
                key = hash(t) if fingerprinting else t
                j = index.get(key)
                if j is None:
                    j = len(states)
                    index[key] = j
                    states.append(t)
                    if fingerprinting:
                        fps.append(key)  # type: ignore[arg-type]
                    parent.append(i)
                    label = label_memo.get(succ.label)
                    if label is None:
                        label = label_memo[succ.label] = succ.label
                    labels.append(label)
                    rt = rank(t)
                    ranks.append(rt)
                    kind = succ.label[0]
                    actions[kind] = actions.get(kind, 0) + 1
                    found = check(t)
                    if found:
                        record(found, j)
                        stop = self.stop_at_first
                    if self.goal is not None and self.goal(t):
                        self.goal_found = j
                        stop = True
                    if unwitnessed:
                        for pid in witness(t) & unwitnessed:
                            result.witnesses[pid] = Finding(pid, "", j)
                            unwitnessed.discard(pid)
                else:
                    rt = ranks[j]
                if rt >= r:
                    suspicious.append((i, j, succ))
                for note in succ.notes:
                    if note.startswith("!"):
                        record([ModelViolation(note[1:], succ.label[1], f"on {succ.label[0]}")],
                               j, i, succ, noted=True)
                        stop = self.stop_at_first
                    elif note in unwitnessed:
                        result.witnesses[note] = Finding(note, "", j, i, succ.label, succ.state,
                                                         noted=True)
                        unwitnessed.discard(note)
            if not fair_enabled:
                result.quiescent += 1
                found = props.quiescent_violations(s)
                if found:
                    record(found, i)
                    stop = self.stop_at_first
            if fingerprinting:
                states[i] = ()
            i += 1
            if self.max_states is not None and len(states) >= self.max_states:
                result.complete = False
                result.stopped_reason = f"stopped at --max-states {self.max_states}"
                break
            if self.progress is not None and i % 1024 == 0:
                now = time.monotonic()
                if now >= next_report:
                    next_report = now + self.progress_every
                    self.progress(len(states), transitions, depth, now - started)
        if stop and i < len(states):
            result.complete = False
            result.stopped_reason = ("stopped at the goal" if self.goal_found is not None
                                     else "stopped at the first violation")
        if not result.violations:
            for source, target, succ in suspicious:
                length = self._cycle_length(self._state(target), self._state(source))
                if length:
                    record([ModelViolation(PropertyId.E_EVERY_CALL_RECORDED, -1,
                                           f"{succ.label[0]} closes a cycle of {length} steps "
                                           "that can repeat for ever")], target, source, succ)
                    break
        result.states = len(states)
        result.transitions = transitions
        result.depth = depth
        result.seconds = time.monotonic() - started
        result.unwitnessed = sorted(unwitnessed) if result.complete else []
        result.fired = system.fired_edges()
        result.never_fired = sorted(all_edges(system.config.cancel_records_failed)
                                    - result.fired)
        result.action_counts = dict(sorted(actions.items()))
        result.visited = "fingerprint" if fingerprinting else "exact"
        return result

    def _reduced(self, r: int, succs: list[Successor],
                 amp: list[Successor]) -> list[Successor]:
        """The ample set `amp` when every step of it lowers the rank from `r` (C3's
        proviso; it also keeps the state non-quiescent through the fair step `amp` holds),
        else every successor."""
        if amp is succs:
            return succs
        canonical = self.canonical
        rank = self.properties.rank
        if all(rank(canonical(succ.state)) < r for succ in amp):
            return amp
        return succs

    def _state(self, number: int) -> State:
        return self.states[number] if not self.fingerprints else self.path(number)[-1][1]

    def _cycle_length(self, start: State, goal: State, limit: int = 200_000) -> int:
        """Steps from state `start` back to state `goal`, or 0 when `goal` is not reachable
        (searched only where the rank failed to fall, which never happens in a sound model)."""
        return cycle_length(self.system, self.canonical, start, goal, limit)

    def path(self, target: int) -> list[tuple[Label | None, State]]:
        """The canonical states from the initial one to state number `target`; with
        fingerprints, replayed from the initial state along the stored labels."""
        numbers: list[int] = []
        while target >= 0:
            numbers.append(target)
            target = self.parent[target]
        numbers.reverse()
        if not self.fingerprints:
            return [(self.labels[n], self.states[n]) for n in numbers]
        state = self.canonical(self.system.initial())
        steps: list[tuple[Label | None, State]] = [(None, state)]
        for n in numbers[1:]:
            for succ in self.system.successors(state):
                t = self.canonical(succ.state)
                if succ.label == self.labels[n] and hash(t) == self.fingerprints[n]:
                    state = t
                    break
            else:
                raise RuntimeError(f"no successor has state {n}'s fingerprint: a fingerprint "
                                   "collision; run again with --visited exact")
            steps.append((self.labels[n], state))
        return steps


def _unchanged(state: State) -> State:
    return state


def cycle_length(system: System, canonical: Callable[[State], State], start: State,
                 goal: State, limit: int = 200_000) -> int:
    """Steps from canonical state `start` back to canonical state `goal` (breadth-first, at
    most `limit` states; `goal` may be `start`), or 0 when none is found."""
    frontier = [start]
    depth = {start: 1}
    for s in frontier:
        for succ in system.successors(s):
            t = canonical(succ.state)
            if t == goal:
                return depth[s] + 1
            if t in depth:
                continue
            depth[t] = depth[s] + 1
            frontier.append(t)
            if len(frontier) >= limit:
                return 0
    return 0
