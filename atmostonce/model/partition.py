"""Which process owns a canonical state in a parallel check, and how states travel between
processes.

The processes are forked after a warm-up, so the calls interned by then have the same number
in every process; a call interned later may have different numbers in different processes.
So the owner is a hash of what does not depend on those numbers or on the naming of workers
(the globals, the multiset of worker states, and the multiset of the calls' contents with the
workers erased), the same for every state of an orbit in every process; and a state travels
with the content of each call numbered after the fork in place of its number.
"""

from __future__ import annotations

from typing import Any, cast

from atmostonce.model.layout import ABW, AW, NG, RUNS, State
from atmostonce.model.system import System

Encoded = tuple[int, ...] | list[object]
"""A state as it travels: itself when it names shared calls only, else a list with the other
calls by their content (the call with its runs in place of its run set's number)."""


class Partition:
    """The owner of each state among `processes` processes, and the encoding of states for
    processes that share the first `shared` interned calls."""

    def __init__(self, system: System, processes: int, shared: int) -> None:
        self.system = system
        self.processes = processes
        self.shared = shared
        self.base = NG + system.workers
        self.signatures: list[int] = []
        """Each interned call's `_signature`, by number, filled as calls are met."""

    def _signature(self, cid: int) -> int:
        """A hash of call `cid`'s content with its workers erased (whether it names one)."""
        c = self.system.call(cid)
        runs = tuple(sorted((rs, an) for _, rs, an in self.system.runs(c[RUNS])))
        return hash((c[:AW], c[AW] >= 0, runs, c[RUNS + 1:ABW], c[ABW] >= 0, c[ABW + 1:]))

    def invariant(self, state: State) -> int:
        """A 64-bit hash of a canonical state's orbit, the same whatever the calls' numbers
        (the canonical form lists the workers' states in order, whatever their names)."""
        signatures = self.signatures
        ids = state[self.base:]
        try:
            total = sum(map(signatures.__getitem__, ids))
        except IndexError:
            top = max(ids)
            signatures.extend(self._signature(c) for c in range(len(signatures), top + 1))
            total = sum(map(signatures.__getitem__, ids))
        return hash((state[:self.base], total))

    def owner(self, state: State) -> int:
        return self.invariant(state) % self.processes

    def encode(self, state: State) -> Encoded:
        base = self.base
        ids = state[base:]
        if not ids or max(ids) < self.shared:
            return state
        system = self.system
        out: list[object] = list(state[:base])
        for cid in ids:
            if cid < self.shared:
                out.append(cid)
            else:
                c = system.call(cid)
                out.append(c[:RUNS] + (system.runs(c[RUNS]),) + c[RUNS + 1:])
        return out

    def decode(self, encoded: Encoded) -> State:
        """The state in this process's numbering: `encoded` itself when it names shared calls
        only; otherwise in the sender's order (canonicalise it)."""
        if type(encoded) is tuple:
            return encoded
        base = self.base
        system = self.system
        out: list[int] = []
        for item in encoded[base:]:
            if isinstance(item, int):
                out.append(item)
            else:
                content = cast(tuple[Any, ...], item)
                out.append(system.intern((*content[:RUNS], system.runset(content[RUNS]),
                                          *content[RUNS + 1:])))
        return tuple(cast(list[int], encoded[:base])) + tuple(out)
