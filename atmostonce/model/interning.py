"""The composed system's interned calls and run sets: each distinct call and set of runs is
stored once and named by a small integer, with the masks and worker references a state's
successors and canonical form read from every call."""

from __future__ import annotations

from atmostonce.model.layout import (
    A_HANDED,
    ABW,
    AS,
    AW,
    CS,
    NG,
    RECORD_OF_STATE,
    RUNS,
    Call,
    Run,
    State,
    T,
)


class Interning:
    """The store of interned calls and run sets; `System` fills its fields."""

    workers: int
    empty_runs: int
    _calls: list[Call]
    _call_ids: dict[Call, int]
    _runsets: list[tuple[Run, ...]]
    _runset_ids: dict[tuple[Run, ...], int]
    _refs: list[tuple[tuple[int, int], ...]]
    _info: list[tuple[int, int, int, int, int]]
    _loads2: list[tuple[int, int]]

    def runset(self, runs: tuple[Run, ...]) -> int:
        rid = self._runset_ids.get(runs)
        if rid is None:
            rid = len(self._runsets)
            self._runsets.append(runs)
            self._runset_ids[runs] = rid
        return rid

    def runs(self, rid: int) -> tuple[Run, ...]:
        return self._runsets[rid]

    def intern(self, call: Call) -> int:
        cid = self._call_ids.get(call)
        if cid is None:
            cid = len(self._calls)
            self._calls.append(call)
            self._call_ids[call] = cid
            self._info.append(self._call_info(call))
            refs = self._worker_refs(call)
            self._refs.append(refs)
            if self.workers == 2:
                loads = dict(refs)
                self._loads2.append((loads.get(0, 0), loads.get(1, 0)))
        return cid

    def _call_info(self, call: Call) -> tuple[int, int, int, int, int]:
        """Bit masks a state's successors need from each call: the workers it keeps busy, its
        tool if the server counts an abandoned run of it, the worker of that run, its tool if
        in flight, and its tool if a run of it really goes on after its record (ground truth,
        for the A-FENCE check)."""
        runs = self._runsets[call[RUNS]]
        busy = 1 << call[AW] if call[AS] == A_HANDED else 0
        for run in runs:
            busy |= 1 << run[0]
        abandoned = 1 << call[T] if call[ABW] >= 0 else 0
        named = 1 << call[ABW] if call[ABW] >= 0 else 0
        recorded = call[CS] in RECORD_OF_STATE
        in_flight = 0 if recorded else 1 << call[T]
        orphan = 1 << call[T] if recorded and runs else 0
        return busy, abandoned, named, in_flight, orphan

    def _worker_refs(self, call: Call) -> tuple[tuple[int, int], ...]:
        """(worker, weight) for each way the call names a worker; weights tell roles apart."""
        refs: dict[int, int] = {}
        if call[AW] >= 0:
            refs[call[AW]] = refs.get(call[AW], 0) + 1
        if call[ABW] >= 0:
            refs[call[ABW]] = refs.get(call[ABW], 0) + 16
        for w, rs, _ in self._runsets[call[RUNS]]:
            refs[w] = refs.get(w, 0) + 256 * (rs + 1)
        return tuple(sorted(refs.items()))

    def call(self, cid: int) -> Call:
        return self._calls[cid]

    def calls_of(self, state: State) -> list[Call]:
        calls = self._calls
        return [calls[cid] for cid in state[NG + self.workers:]]
