"""The canonical form of a state: the representative under renaming workers and reordering
calls, which the explorer stores in place of every state of its orbit."""

from __future__ import annotations

from atmostonce.model.interning import Interning
from atmostonce.model.layout import ABW, AW, NG, RUNS, State


class Symmetry(Interning):
    """Canonical forms over the interned calls; `System` fills the permutation tables."""

    _all_perms: list[tuple[int, ...]]
    _inverse: list[tuple[int, ...]]
    _renamed: list[list[int]]
    _perms: dict[tuple[tuple[int, int], ...], list[int]]

    def canonical(self, state: State) -> State:
        """The representative of `state` under renaming workers and reordering calls.

        Workers are ordered by (state, how much work names them); only when two workers tie
        on both and work names them are both orders built and the smaller kept.
        """
        nw = self.workers
        base = NG + nw
        ids = state[base:]
        if nw == 1:
            return state[:base] + tuple(sorted(ids))
        if nw == 2:
            l0 = l1 = 0
            loads2 = self._loads2
            for cid in ids:
                a, b = loads2[cid]
                l0 += a
                l1 += b
            k0 = (state[NG], l0)
            k1 = (state[NG + 1], l1)
            if k0 < k1 or (k0 == k1 and l0 == 0):
                return state[:base] + tuple(sorted(ids))
            if k0 > k1:
                return self._permuted(state, 1)
            plain = state[:base] + tuple(sorted(ids))
            swapped = self._permuted(state, 1)
            return plain if plain <= swapped else swapped
        loads = [0] * nw
        refs = self._refs
        for cid in ids:
            for w, weight in refs[cid]:
                loads[w] += weight
        keys = tuple((state[NG + w], loads[w]) for w in range(nw))
        perms = self._perms.get(keys)
        if perms is None:
            perms = self._sorting_perms(keys)
        if len(perms) == 1:
            p = perms[0]
            if p == -1:
                return state[:base] + tuple(sorted(ids))
            return self._permuted(state, p)
        best: State | None = None
        for p in perms:
            candidate = state[:base] + tuple(sorted(ids)) if p == -1 else self._permuted(state, p)
            if best is None or candidate < best:
                best = candidate
        assert best is not None
        return best

    def _sorting_perms(self, keys: tuple[tuple[int, int], ...]) -> list[int]:
        """Indexes into `self._all_perms` of the renamings that sort `keys` (-1: identity);
        workers named by no work are left in place among equals."""
        target = sorted(keys)
        found: list[int] = []
        for index, perm in enumerate(self._all_perms):
            if [keys[perm[new]] for new in range(len(keys))] == target:
                identity = all(perm[new] == new for new in range(len(keys)))
                found.append(-1 if identity else index)
        if len(found) > 1 and all(load == 0 for _, load in keys if keys.count((_, load)) > 1):
            found = [min(found, key=lambda f: (f != -1, f))]
        self._perms[keys] = found
        return found

    def _permuted(self, state: State, p: int) -> State:
        """`state` with workers renamed by permutation number `p` (`perm[new] = old`)."""
        nw = self.workers
        base = NG + nw
        perm = self._all_perms[p]
        renamed = self._renamed[p]
        calls = self._calls
        ids = []
        for cid in state[base:]:
            if cid >= len(renamed):
                renamed.extend([-1] * (len(calls) - len(renamed)))
            mapped = renamed[cid]
            if mapped < 0:
                mapped = self._rename_call(cid, self._inverse[p])
                if cid >= len(renamed):
                    renamed.extend([-1] * (cid + 1 - len(renamed)))
                renamed[cid] = mapped
            ids.append(mapped)
        ws = tuple(state[NG + perm[new]] for new in range(nw))
        return state[:NG] + ws + tuple(sorted(ids))

    def _rename_call(self, cid: int, inverse: tuple[int, ...]) -> int:
        c = list(self._calls[cid])
        if c[AW] >= 0:
            c[AW] = inverse[c[AW]]
        if c[ABW] >= 0:
            c[ABW] = inverse[c[ABW]]
        runs = self._runsets[c[RUNS]]
        if runs:
            c[RUNS] = self.runset(tuple(sorted((inverse[w], rs, an) for w, rs, an in runs)))
        return self.intern(tuple(c))
