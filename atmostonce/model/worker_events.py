"""Worker-level events, which change many calls at once: crashes, heartbeat timeouts,
reconnections and server restarts, and the reconcile job that reports unknown outcomes, asking
the Flow's history before the service (D-30)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from atmostonce.model.call_steps import CallSteps
from atmostonce.model.layout import (
    A_OUT,
    A_QUEUED,
    A_STARTED,
    ABW,
    AS,
    AW,
    C_FAILED,
    C_UNKNOWN,
    CS,
    E_LOST,
    E_LOST_RESTART,
    FK,
    FK_MAY_STILL,
    FT,
    G_HISTORY_NOT_RUN,
    JC,
    R_HELD_FAIL,
    R_HELD_OK,
    RCH,
    REP,
    RS,
    RUN,
    RUNS,
    W_CRASHED,
    WORKER,
    Call,
    G,
    Label,
    hands,
    last_end,
)
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.step_kinds import StepKind

_Emit = Callable[
    [Label, Sequence[int], tuple[int, ...], tuple[int, ...], list[str], bool], None
]


class WorkerEvents(CallSteps):
    """The transitions of worker-level events; `System` fills the event memo."""

    _event_memo: dict[tuple[str, int, int], tuple[int, tuple[str, ...]]]

    # Worker-level events change many calls at once; what each does to one call depends only
    # on the call and the event, so it is memoised per (event, call, worker).

    def _each(self, ids: tuple[int, ...], event: str, w: int, notes: list[str]) -> tuple[int, ...]:
        memo = self._event_memo
        out = []
        for cid in ids:
            key = (event, cid, w)
            hit = memo.get(key)
            if hit is None:
                found: list[str] = []
                hit = (self._apply_event(self._calls[cid], event, w, found), tuple(found))
                memo[key] = hit
            out.append(hit[0])
            notes.extend(hit[1])
        return tuple(out)

    def _apply_event(self, c: Call, event: str, w: int, notes: list[str]) -> int:
        """What a worker-level event does to one call; returns the call's new id."""
        p = self.choices
        n = list(c)
        runs = self._runsets[c[RUNS]]
        stops_runs = event in ("crash", "detect_crashed") or (
            event == "detect_cut_off" and p.self_fence)
        if stops_runs and any(r[0] == w for r in runs):
            for run in runs:
                if run[0] == w:
                    self._fire(RUN, run[1], "kill")
            n[RUNS] = self.runset(tuple(run for run in runs if run[0] != w))
        if event.startswith("detect"):
            if c[AW] == w and c[AS] in A_OUT:
                if p.rehand_lost:  # the mutant: the lost attempt goes to another worker
                    n[AS], n[AW], n[RCH] = A_QUEUED, -1, 1
                elif not p.decide_lost:  # the mutant: nobody decides the lost attempt
                    pass
                else:
                    if c[AS] == A_STARTED:
                        notes.append(PropertyId.S_LOST_BEFORE_HEARTBEAT)
                    self._end_attempt(n, E_LOST, notes)
            if n[ABW] == w and p.self_fence:
                n[ABW] = -1
        elif event == "reconnect":
            held = [run for run in runs if run[0] == w and run[1] in (R_HELD_OK, R_HELD_FAIL)]
            if held:
                n[RUNS] = self.runset(tuple(run for run in runs if run not in held))
                for _, rs, an in held:
                    self._fire(RUN, rs, "deliver")
                    self._deliver(n, w, an, rs == R_HELD_OK, notes)
            if n[ABW] == w and not any(run[0] == w for run in self._runsets[n[RUNS]]):
                n[ABW] = -1  # the worker says what it still runs when it reconnects
        elif event == "restart" and c[AS] in A_OUT:
            self._abandon(n, c[AW])
            self._end_attempt(n, E_LOST_RESTART, notes)
        return self.intern(tuple(n))

    def _emit_detect(self, emit: _Emit, gl: tuple[int, ...], ws: tuple[int, ...],
                     ids: tuple[int, ...], w: int) -> None:
        """The heartbeat timeout declares worker `w` lost; by then a cut-off worker's lease ran
        out and it stopped its runs (D-12)."""
        notes: list[str] = []
        event = "detect_crashed" if ws[w] == W_CRASHED else "detect_cut_off"
        new_ids = self._each(ids, event, w, notes)
        emit((StepKind.DETECT, w, -1), gl, self._ws(ws, w, "detect"), new_ids, notes, True)

    def _emit_reconnect(self, emit: _Emit, gl: tuple[int, ...], ws: tuple[int, ...],
                        ids: tuple[int, ...], w: int) -> None:
        """The cut-off worker's connection resumes: held results and run endings arrive."""
        notes: list[str] = []
        new_ids = self._each(ids, "reconnect", w, notes)
        emit((StepKind.RECONNECT, w, -1), gl, self._ws(ws, w, "reconnect"), new_ids, notes, False)

    def _emit_restart(self, emit: _Emit, gl: tuple[int, ...], ws: tuple[int, ...],
                      ids: tuple[int, ...]) -> None:
        """A server restart (D-8): every connection drops, every attempt out is lost (its run
        may go on), and queued attempts stay queued: they never reached a worker."""
        gl2 = list(gl)
        gl2[RS] -= 1
        gl2[FT] -= 1
        ws2 = tuple(self._fire(WORKER, st, "server_restart") for st in ws)
        notes: list[str] = []
        new_ids = self._each(ids, "restart", -1, notes)
        emit((StepKind.RESTART, -1, -1), gl2, ws2, new_ids, notes, False)

    def reconciled(self, c: Call) -> bool:
        """Whether the reconcile job looks at call `c`: an outcome_unknown call, and with
        `reconcile_cancelled` also a failed one whose tool may still be running (D-20)."""
        if c[CS] == C_UNKNOWN:
            return True
        return self.config.reconcile_cancelled and c[CS] == C_FAILED and c[FK] == FK_MAY_STILL

    def _emit_reconcile(self, emit: _Emit, gl: tuple[int, ...], ws: tuple[int, ...],
                        ids: tuple[int, ...], calls: list[Call]) -> None:
        """The reconcile job (TC-RCN-ONCE) runs once the turn's calls have records: it reads
        the history, then sends one report per unknown call no user message names yet. It
        may also crash right after one send, before the send returns; it is then simply run
        again."""
        reads = self.choices.reconcile_reads_history
        todo = [i for i, c in enumerate(calls)
                if self.reconciled(c) and (c[REP] == 0 or (not reads and c[REP] < 2))]
        if not todo:
            return
        sent = list(ids)
        for i in todo:
            sent[i] = self._reported(calls[i])
        emit((StepKind.RECONCILE, -1, -1), gl, ws, tuple(sent), [], True)
        if gl[JC] > 0:
            gl2 = list(gl)
            gl2[JC] -= 1
            for first in todo:
                crashed = ids[:first] + (self._reported(calls[first]),) + ids[first + 1:]
                emit((StepKind.RECONCILE_CRASH, first, -1), gl2, ws, crashed, [], False)

    def _reported(self, c: Call) -> int:
        """The call once the job reported it. The report asks the history first (D-30): when it
        shows no attempt reached a worker, the report says the tool did not run, without asking
        the service; the ghost bit remembers that claim for A-DID-NOT-RUN-TRUE."""
        g = c[G]
        unreached = not hands(g) or (not self.choices.restart_loss_reached
                                     and last_end(g) == E_LOST_RESTART)
        if unreached:
            g |= G_HISTORY_NOT_RUN
        return self.intern(c[:REP] + (c[REP] + 1,) + c[REP + 1:G] + (g,) + c[G + 1:])
