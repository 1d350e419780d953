"""`atmostonce check --processes N`: the exhaustive check as a level-synchronous breadth-first
search over N processes, with the same distinct states and verdicts as `Explorer`.

The parent explores the first levels itself (the warm-up), then forks the workers, so that
they share its interned calls and compiled tables without copying them. Each worker owns
the states `Partition.owner` gives it: it expands the frontier it owns, keeps the successors
it owns and writes the others, one batch per owner and level, as `marshal` bytes of compact
encoded states to a shared-memory directory; at the end of each level every worker reads the
batches addressed to it. Every check the serial explorer makes on a state is made by its
owner when the state is first reached, every check on an edge (notes, the rank falling) by
the worker that expands it. Findings are kept per level, so each counterexample and witness
is a shortest one, as in the serial explorer; their paths are replayed in the parent from
the chain of orbit hashes the owners keep (8 bytes a state, not the state).
"""

from __future__ import annotations

import contextlib
import marshal
import multiprocessing
import os
import shutil
import tempfile
import time
import traceback
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from atmostonce.model.explorer import Finding, Progress, Result, all_edges, cycle_length
from atmostonce.model.layout import NG, Label, State
from atmostonce.model.partition import Encoded, Partition
from atmostonce.model.properties import ModelViolation, Properties
from atmostonce.model.system import System
from atmostonce.spec.properties import PropertyId

WARM_UP_STATES = 2_000
"""The frontier the parent reaches alone before it forks: enough for every worker to start
with work, few enough to take a fraction of a second."""

Record = tuple[Any, ...]
"""A finding as a worker reports it: ("state", property, message, gid) for a state, or
("edge", property, message, source gid, encoded successor) for a transition."""


@dataclass
class Level:
    """What one worker found while expanding or receiving one level."""

    states: int = 0
    frontier: int = 0
    transitions: int = 0
    quiescent: int = 0
    violations: list[Record] = field(default_factory=list)
    witnesses: list[Record] = field(default_factory=list)
    suspicious: list[int] = field(default_factory=list)
    """States reached by a step along which the rank did not fall."""


class Part:
    """One process's share of the search: the states it owns (by key: the state, or its
    64-bit fingerprint), each one's parent and orbit hash, and the frontier it expands next.

    A state's global number is `index * (processes + 1) + part`; part `processes` is the
    parent's warm-up."""

    def __init__(self, system: System, props: Properties, part: int, processes: int,
                 partition: Partition | None, fingerprints: bool) -> None:
        self.system = system
        self.props = props
        self.part = part
        self.stride = processes + 1
        self.partition = partition
        self.fingerprints = fingerprints
        self.states: list[State] | None = [] if partition is None else None
        """The warm-up's states, by number (workers keep none)."""
        self.index: dict[object, int] = {}
        self.parent = array("q")
        self.orbit = array("q")
        self.ranks = array("q")
        self.warm_ranks = self.ranks
        self.frontier: list[tuple[State, int, int]] = []
        self.next: list[tuple[State, int, int]] = []
        self.unwitnessed: set[str] = set()
        self.known: set[str] = set()
        self.actions: dict[str, int] = {}
        self.level = Level()
        self.outgoing: list[list[tuple[Encoded, int, str, int]]] = [
            [] for _ in range(processes)]

    def arrive(self, t: State, source: int, kind: str, source_rank: int) -> None:
        """Keep state `t`, reached from global number `source` (of rank `source_rank`) by a
        step of `kind`, if new; note it when the step did not lower the rank."""
        key = hash(t) if self.fingerprints else t
        gid = self.index.get(key)
        if gid is not None:
            number, part = divmod(gid, self.stride)
            if (self.ranks if part == self.part else self.warm_ranks)[number] >= source_rank:
                self.level.suspicious.append(gid)
            return
        number = len(self.parent)
        gid = number * self.stride + self.part
        self.index[key] = gid
        if self.states is not None:
            self.states.append(t)
        self.parent.append(source)
        self.orbit.append(self._orbit(t))
        rank = self.props.rank(t)
        self.ranks.append(rank)
        self.next.append((t, gid, rank))
        self.actions[kind] = self.actions.get(kind, 0) + 1
        self.level.states += 1
        found = self.props.violations(t)
        if found:
            self._record(found, gid)
        if self.unwitnessed:
            for pid in self.props.witnessed(t) & self.unwitnessed:
                self.level.witnesses.append(("state", pid, "", gid))
                self.unwitnessed.discard(pid)
        if rank >= source_rank:
            self.level.suspicious.append(gid)

    def _orbit(self, t: State) -> int:
        return self.partition.invariant(t) if self.partition is not None else 0

    def _record(self, found: list[ModelViolation], gid: int, edge: Encoded | None = None,
                source: int = -1) -> None:
        for v in found:
            if v.property in self.known:
                continue
            self.known.add(v.property)
            message = f"call {v.call}: {v.message}" if v.call >= 0 else v.message
            self.level.violations.append(("state", v.property, message, gid) if edge is None
                                         else ("edge", v.property, message, source, edge))

    def expand(self) -> None:
        """Expand the frontier: keep owned successors, queue the others for their owners."""
        system, props = self.system, self.props
        canonical, successors = system.canonical, system.successors
        arrive = self.arrive
        partition = self.partition
        owner = partition.invariant if partition is not None else None
        signatures = partition.signatures if partition is not None else []
        signature: Callable[[int], int] = signatures.__getitem__
        processes = partition.processes if partition is not None else 1
        encode = partition.encode if partition is not None else None
        shared = partition.shared if partition is not None else 0
        base = system.workers + NG
        part = self.part
        outgoing = self.outgoing
        index, stride, fingerprints = self.index, self.stride, self.fingerprints
        ranks, warm_ranks = self.ranks, self.warm_ranks
        sent: dict[State, int] = {}
        level = self.level
        suspicious = level.suspicious
        transitions = quiescent = 0
        for s, gid, r in self.frontier:
            fair = False
            for succ in successors(s):
                transitions += 1
                t = canonical(succ.state)
                if t == s:
                    continue
                if succ.fair:
                    fair = True
                kind = succ.label[0]
                o = part
                if owner is not None:
                    try:  # Partition.invariant, inlined: it runs on every step
                        o = hash((t[:base], sum(map(signature, t[base:])))) % processes
                    except IndexError:
                        o = owner(t) % processes
                if o == part:
                    known = index.get(hash(t) if fingerprints else t)
                    if known is None:
                        arrive(t, gid, kind, r)
                    else:  # Part.arrive's first lines, inlined for the most common case
                        number, owned = divmod(known, stride)
                        if (ranks if owned == part else warm_ranks)[number] >= r:
                            suspicious.append(known)
                elif sent.get(t, r + 1) > r:
                    # Only the lowest-ranked step into a state can show the rank not falling
                    # where any can: cycles are looked for through every state so reached.
                    sent[t] = r
                    ids = t[base:]
                    if ids and max(ids) >= shared:
                        assert encode is not None
                        outgoing[o].append((encode(t), gid, kind, r))
                    else:
                        outgoing[o].append((t, gid, kind, r))
                for note in succ.notes:
                    edge = succ.state if encode is None else encode(succ.state)
                    if note.startswith("!"):
                        self._record([ModelViolation(note[1:], succ.label[1],
                                                     f"on {succ.label[0]}")], -1, edge, gid)
                    elif note in self.unwitnessed:
                        level.witnesses.append(("edge", note, "", gid, edge))
                        self.unwitnessed.discard(note)
            if not fair:
                quiescent += 1
                found = props.quiescent_violations(s)
                if found:
                    self._record(found, gid)
        level.transitions += transitions
        level.quiescent += quiescent
        self.frontier = []

    def receive(self, batches: list[list[tuple[Encoded, int, str, int]]]) -> None:
        assert self.partition is not None
        decode, canonical = self.partition.decode, self.system.canonical
        arrive = self.arrive
        for batch in batches:
            for encoded, source, kind, rank in batch:
                # A state of shared calls only is canonical here as it was where it was sent.
                t = encoded if type(encoded) is tuple else canonical(decode(encoded))
                arrive(t, source, kind, rank)

    def turn(self) -> Level:
        """End the level: the received states become the frontier; report the level."""
        self.frontier, self.next = self.next, []
        level, self.level = self.level, Level()
        level.frontier = len(self.frontier)
        return level

    def node(self, number: int) -> tuple[int, int]:
        return self.parent[number], self.orbit[number]


def _serve(conn: Connection, part: int, warm: Part, partition: Partition, directory: str,
           fingerprints: bool) -> None:
    """A worker's loop: take its share of the warm-up, then answer the parent's commands."""
    try:
        own = Part(warm.system, warm.props, part, partition.processes, partition, fingerprints)
        own.warm_ranks = warm.ranks
        owner = partition.owner
        for key, gid in warm.index.items():
            state: State = key  # type: ignore[assignment]
            if owner(state) == part:
                own.index[hash(state) if fingerprints else state] = gid
        own.frontier = [entry for entry in warm.frontier if owner(entry[0]) == part]
        own.known = set(warm.known)
        conn.send(("ready", len(own.index)))
        while True:
            command, argument = conn.recv()
            if command == "expand":
                own.unwitnessed = argument
                own.expand()
                for to, batch in enumerate(own.outgoing):
                    if batch:
                        with open(os.path.join(directory, f"{part}-{to}"), "wb") as out:
                            out.write(marshal.dumps(batch))
                        own.outgoing[to] = []
                conn.send(("expanded", None))
            elif command == "receive":
                batches = []
                for source in range(partition.processes):
                    path = os.path.join(directory, f"{source}-{part}")
                    if source != part and os.path.exists(path):
                        with open(path, "rb") as f:
                            batches.append(marshal.loads(f.read()))
                        os.unlink(path)
                own.receive(batches)
                conn.send(("level", own.turn()))
            elif command == "node":
                conn.send(("node", own.node(argument)))
            elif command == "finish":
                conn.send(("finish", (own.actions, own.system.fired)))
            else:
                return
    except BaseException:  # the parent reports it; a worker never dies silently
        conn.send(("error", traceback.format_exc()))


class ParallelExplorer:
    """Explores one system over `processes` forked processes; `run` returns the same
    `Result` as `Explorer.run` (state numbers in findings name paths kept here)."""

    def __init__(self, system: System, processes: int, *, stop_at_first: bool = True,
                 max_states: int | None = None, progress: Progress | None = None,
                 fingerprints: bool = False, warm_up: int = WARM_UP_STATES) -> None:
        self.system = system
        self.canonical: Callable[[State], State] = system.canonical
        self.processes = processes
        self.stop_at_first = stop_at_first
        self.max_states = max_states
        self.progress = progress
        self.fingerprints = fingerprints
        self.warm_up = warm_up
        self.props = Properties(system)
        self.paths: list[list[tuple[Label | None, State]]] = []
        self._conns: list[Connection] = []
        self._invariants = Partition(system, 1, 0)
        """Orbit hashes and decoding in this process, for replaying paths."""

    def path(self, target: int) -> list[tuple[Label | None, State]]:
        return self.paths[target]

    def run(self) -> Result:
        started = time.monotonic()
        system, props = self.system, self.props
        result = Result(visited="fingerprint" if self.fingerprints else "exact")
        warm = Part(system, props, self.processes, self.processes, None, False)
        warm.unwitnessed = set(props.wanted)
        init = system.canonical(system.initial())
        warm.arrive(init, -1, "", props.rank(init) + 1)
        warm.actions.clear()
        levels = [warm.turn()]
        depth = 0
        while levels[-1].frontier and len(warm.frontier) < self.warm_up:
            if self._stops(levels, result):
                break
            warm.expand()
            levels.append(warm.turn())
            depth += 1
        workers: list[multiprocessing.process.BaseProcess] = []
        directory = ""
        if levels[-1].frontier and not self._stops(levels, result):
            partition = Partition(system, self.processes, len(system._calls))
            directory = tempfile.mkdtemp(prefix="atmostonce-check-",
                                         dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
            context = multiprocessing.get_context("fork")
            for part in range(self.processes):
                mine, theirs = context.Pipe()
                worker = context.Process(target=_serve, daemon=True, args=(
                    theirs, part, warm, partition, directory, self.fingerprints))
                worker.start()
                theirs.close()
                workers.append(worker)
                self._conns.append(mine)
        try:
            if workers:
                self._ask_all("ready", None)
                while True:
                    unwitnessed = set(props.wanted) - self._witnessed(levels)
                    self._ask_all("expand", unwitnessed)
                    parts = self._ask_all("receive", None)
                    level = _merged(parts)
                    levels.append(level)
                    if level.states:
                        depth += 1
                    if self.progress is not None:
                        self.progress(sum(lv.states for lv in levels),
                                      sum(lv.transitions for lv in levels), depth,
                                      time.monotonic() - started)
                    if not level.frontier or self._stops(levels, result):
                        break
                result.processes = max(1, len(workers))
            self._conclude(result, levels, warm, started, bool(workers))
        finally:
            for conn in self._conns:
                with contextlib.suppress(OSError):
                    conn.send(("stop", None))
            for process in workers:
                process.join(timeout=10)
                if process.is_alive():
                    process.kill()
                    process.join()
            if directory:
                shutil.rmtree(directory, ignore_errors=True)
            self._conns = []
        return result

    def _witnessed(self, levels: list[Level]) -> set[str]:
        return {w[1] for level in levels for w in level.witnesses}

    def _stops(self, levels: list[Level], result: Result) -> bool:
        """Whether to stop after the levels so far, noting why in `result`."""
        last = levels[-1]
        if self.stop_at_first and any(level.violations for level in levels):
            if last.frontier:
                result.complete = False
                result.stopped_reason = "stopped at the first violation"
            return True
        if self.max_states is not None and sum(lv.states for lv in levels) >= self.max_states:
            if last.frontier:
                result.complete = False
                result.stopped_reason = f"stopped at --max-states {self.max_states}"
            return True
        return False

    def _ask_all(self, command: str, argument: object) -> list[Any]:
        if command != "ready":
            for conn in self._conns:
                conn.send((command, argument))
        return [self._answer(conn) for conn in self._conns]

    def _answer(self, conn: Connection) -> Any:
        try:
            kind, value = conn.recv()
        except EOFError:
            raise RuntimeError("a check worker process died") from None
        if kind == "error":
            raise RuntimeError(f"a check worker failed:\n{value}")
        return value

    def _conclude(self, result: Result, levels: list[Level], warm: Part, started: float,
                  forked: bool) -> None:
        result.states = sum(level.states for level in levels)
        result.transitions = sum(level.transitions for level in levels)
        result.quiescent = sum(level.quiescent for level in levels)
        result.depth = max((n for n, level in enumerate(levels) if level.states), default=0)
        actions = dict(warm.actions)
        fired = set(self.system.fired)
        if forked:
            for worker_actions, worker_fired in self._ask_all("finish", None):
                for kind, n in worker_actions.items():
                    actions[kind] = actions.get(kind, 0) + n
                fired |= worker_fired
        self.system.fired = fired
        result.action_counts = dict(sorted(actions.items()))
        result.fired = self.system.fired_edges()
        result.never_fired = sorted(all_edges(self.system.config.cancel_records_failed)
                                    - result.fired)
        for level in levels:
            for record in level.violations:
                if record[1] not in {v.property for v in result.violations}:
                    result.violations.append(self._finding(record, warm))
            for record in level.witnesses:
                if record[1] not in result.witnesses:
                    result.witnesses[record[1]] = self._finding(record, warm)
        if not result.violations:
            # Every cycle has a step along which the rank does not fall, into a state noted
            # as suspicious: a cycle exists if and only if one of those is on one.
            for gid in dict.fromkeys(g for level in levels for g in level.suspicious):
                path = self._replay(gid, warm)
                state = path[-1][1]
                length = cycle_length(self.system, self.canonical, state, state)
                if length:
                    self.paths.append(path)
                    result.violations.append(Finding(
                        PropertyId.E_EVERY_CALL_RECORDED,
                        f"a cycle of {length} steps through this state can repeat for ever",
                        len(self.paths) - 1))
                    break
        result.seconds = time.monotonic() - started
        result.unwitnessed = (sorted(self.props.wanted - set(result.witnesses))
                              if result.complete else [])

    def _state(self, encoded: Encoded, forked: bool) -> State:
        if not forked:
            return encoded  # type: ignore[return-value]
        return self.canonical(self._invariants.decode(encoded))

    def _finding(self, record: Record, warm: Part) -> Finding:
        """A worker's record as a `Finding` whose numbers name paths kept here."""
        forked = bool(self._conns)
        if record[0] == "edge":
            _, pid, message, source, edge = record
            self.paths.append(self._replay(source, warm))
            successor = self._state(edge, forked)
            return Finding(pid, message, -1, len(self.paths) - 1, ("", -1, -1), successor,
                           noted=True)
        _, pid, message, gid = record
        self.paths.append(self._replay(gid, warm, pid))
        return Finding(pid, message, len(self.paths) - 1)

    def _chain(self, gid: int, warm: Part) -> list[int]:
        """The orbit hashes from the initial state's child to state `gid`."""
        chain: list[int] = []
        while gid >= 0:
            number, part = divmod(gid, warm.stride)
            if part == warm.part:
                assert warm.states is not None
                gid, orbit = warm.parent[number], self._invariants.invariant(warm.states[number])
            else:
                self._conns[part].send(("node", number))
                gid, orbit = self._answer(self._conns[part])
            chain.append(orbit)
        chain.reverse()
        return chain[1:]

    def _replay(self, gid: int, warm: Part, wanted: str = ""
                ) -> list[tuple[Label | None, State]]:
        """The canonical states from the initial one to state `gid`, found by following the
        orbit hashes; where two successors share one, both are followed, and at the end the
        first that shows property `wanted` is kept."""
        system, canonical = self.system, self.canonical
        invariant = self._invariants.invariant
        init = canonical(system.initial())
        beams: list[list[State]] = [[init]]
        for orbit in self._chain(gid, warm):
            grown: list[list[State]] = []
            seen: set[State] = set()
            for beam in beams:
                for succ in system.successors(beam[-1]):
                    t = canonical(succ.state)
                    if t not in seen and t != beam[-1] and invariant(t) == orbit:
                        seen.add(t)
                        grown.append([*beam, t])
            if not grown:
                raise RuntimeError("a parallel check's path could not be replayed: a "
                                   "fingerprint collision; run again with --visited exact")
            beams = grown
        chosen = next((beam for beam in beams if self._shows(beam[-1], wanted)), beams[0])
        return [(None, state) for state in chosen]

    def _shows(self, state: State, wanted: str) -> bool:
        props = self.props
        shown = {v.property for v in props.violations(state)}
        shown |= {v.property for v in props.quiescent_violations(state)}
        return not wanted or wanted in shown or wanted in props.witnessed(state)


def _merged(parts: list[Level]) -> Level:
    level = Level()
    for part in parts:
        level.states += part.states
        level.frontier += part.frontier
        level.transitions += part.transitions
        level.quiescent += part.quiescent
        level.violations += part.violations
        level.witnesses += part.witnesses
        level.suspicious += part.suspicious
    return level
