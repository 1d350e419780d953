"""What happens to one call: component edges fired through the compiled tables, attempts
ended and decided by the spec's rule, and the call-local transitions (approvals, hand-outs,
runs applying and finishing, timeouts, re-asks) a state's successors are built from."""

from __future__ import annotations

from typing import Final

from atmostonce.model.choices import ModelChoices
from atmostonce.model.config import ModelConfig
from atmostonce.model.interning import Interning
from atmostonce.model.layout import (
    A_HANDED,
    A_NONE,
    A_OUT,
    A_QUEUED,
    A_RUNNING,
    A_STARTED,
    ABW,
    AS,
    ATTEMPT,
    AW,
    C_ASKED,
    C_ATTEMPTING,
    C_AWAIT,
    C_FAILED,
    C_SUCCEEDED,
    C_UNKNOWN,
    CS,
    E_CANCELLED,
    E_LOST,
    E_LOST_RESTART,
    E_NOT_REACHED,
    E_RETURNED,
    E_TOOL_FAILED,
    EFF,
    FK,
    FK_NONE,
    FT,
    G_APPROVED,
    G_DEADLINE,
    G_HANDS_MASK,
    G_HANDS_SHIFT,
    G_HB,
    G_ISREASK,
    G_KEYBAD,
    G_LEND_MASK,
    G_LEND_SHIFT,
    G_OKD,
    G_RAN_MASK,
    G_RAN_SHIFT,
    G_RECW_MASK,
    G_RECW_SHIFT,
    KEYED,
    NATT,
    NONIDEM_I,
    PLAIN,
    POL,
    R_APPLIED,
    R_STARTED,
    RCH,
    READ_I,
    RSK,
    RSKB,
    RUN,
    RUNS,
    TABLES,
    TE,
    TO,
    W_UP,
    WORKER,
    Call,
    G,
    T,
)
from atmostonce.model.tables import Table
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.step_kinds import StepKind

_END_TRIGGER: Final = {
    E_NOT_REACHED: "expire", E_RETURNED: "return_result", E_TOOL_FAILED: "report_failure",
    E_LOST: "lose", E_LOST_RESTART: "lose", E_CANCELLED: "time_out",
}

# A call-local transition: (kind, worker or -1, the call's new id, (global field, delta)...,
# a new call's id or -1, notes, fair).
Local = tuple[str, int, int, tuple[tuple[int, int], ...], int, tuple[str, ...], bool]
NO_NOTES: tuple[str, ...] = ()


def _bump(g: int, shift: int, mask: int) -> int:
    return g + (1 << shift) if (g >> shift) & mask < mask else g


class ModelError(RuntimeError):
    """The model tried a transition its own machines forbid: a bug in the model or a mutant."""


class CallSteps(Interning):
    """The transitions of single calls; `System` fills the configuration's tables."""

    config: ModelConfig
    choices: ModelChoices
    decisions: dict[tuple[int, int, bool, bool], tuple[str, int]]
    fired: set[tuple[int, int, str]]
    effect_of_tool: tuple[int, ...]
    policy_effect: tuple[tuple[int, int], ...]
    single: tuple[tuple[bool, bool], ...]
    needs_approval: tuple[tuple[bool, bool], ...]
    _ws_memo: dict[tuple[tuple[int, ...], int, str], tuple[int, ...]]

    def _fire(self, table: Table, state: int, trigger: str) -> int:
        try:
            dest = table.step[trigger][state]
        except KeyError:
            raise ModelError(
                f"{table.machine.name} cannot fire {trigger} from {table.states[state]}"
            ) from None
        self.fired.add((id(table), state, trigger))
        return dest

    def fired_edges(self) -> set[tuple[str, str, str]]:
        """(machine, source state, trigger) of every component edge fired so far."""
        by_id = {id(t): t for t in (*TABLES, self.choices.call_tool, self.choices.call_single)}
        return {(by_id[t].machine.name, by_id[t].states[s], trig) for t, s, trig in self.fired}

    def call_table(self, tool: int, policy: int) -> Table:
        p = self.choices
        return p.call_single if self.single[tool][policy] else p.call_tool

    def _end_attempt(self, c: list[int], end: int, notes: list[str]) -> None:
        """The current attempt of call `c` (a list, changed in place) ended with `end`; the
        spec's rule decides between another attempt and the record."""
        p = self.choices
        tool, pol, natt, a_state = c[T], c[POL], c[NATT], c[AS]
        single = self.single[tool][pol]
        limit = p.single_max_attempts if single else self.config.max_attempts
        reached_before = bool(c[RCH])
        trigger = _END_TRIGGER[end]
        self._fire(ATTEMPT, self._fire(ATTEMPT, a_state, trigger), "reset")
        judged = end
        if p.reach_at_hand:
            reached_now = a_state in A_OUT
        else:  # the mutant: the journal learns of the reach only from the first heartbeat
            reached_now = bool(c[G] & G_HB)
            if end in (E_LOST, E_LOST_RESTART) and not reached_now:
                judged = E_NOT_REACHED
        effect = self.policy_effect[tool][pol]
        decision, fk = self.decisions[(effect, judged, natt < limit, reached_before)]
        table = p.call_single if single else p.call_tool
        c[CS] = self._fire(table, c[CS], decision)
        g = (c[G] & ~(G_LEND_MASK << G_LEND_SHIFT) & ~G_HB) | (end << G_LEND_SHIFT)
        c[RCH] = 1 if reached_before or reached_now else 0
        c[AW] = -1
        if decision == "retry":
            if end in (E_RETURNED, E_TOOL_FAILED):
                notes.append("!" + PropertyId.A_RETRY_CLASSES)
            if effect == READ_I and end in (E_LOST, E_LOST_RESTART):
                notes.append(PropertyId.S_READ_RETRY_AFTER_LOSS)
            c[NATT] = natt + 1
            c[AS] = self._fire(ATTEMPT, A_NONE, "schedule")
        else:
            c[FK] = fk
            c[AS] = A_NONE
            g = _bump(g, G_RECW_SHIFT, G_RECW_MASK)
            if p.retry_after_unknown and c[CS] == C_UNKNOWN:
                c[NATT] = natt + 1
                c[AS] = A_QUEUED
        c[G] = g

    def _abandon(self, c: list[int], worker: int) -> None:
        """The server gives up on the current attempt while its run may go on (TC-AMO-3). It
        cannot know whether the run exists, so for a single-attempt call it counts the run as
        possibly going until the worker says otherwise or is declared lost (D-6)."""
        for w, rs, _ in self._runsets[c[RUNS]]:
            if w == worker:
                self._fire(RUN, rs, "cancel")
        if self.single[c[T]][c[POL]]:
            c[ABW] = worker

    def _deliver(self, c: list[int], w: int, attempt_no: int, ok: bool,
                 notes: list[str]) -> None:
        """A run's result reaches the server: it decides the current attempt, or it is late."""
        if c[NATT] == attempt_no and c[AW] == w and c[AS] in (A_STARTED, A_RUNNING):
            if ok:
                c[G] |= G_OKD
            self._end_attempt(c, E_RETURNED if ok else E_TOOL_FAILED, notes)
            return
        if c[ABW] == w:
            c[ABW] = -1
        if self.choices.late_result_overwrites and ok and c[CS] in (C_FAILED, C_UNKNOWN):
            c[CS] = C_SUCCEEDED
            c[G] = _bump(c[G], G_RECW_SHIFT, G_RECW_MASK)

    def _new_call(self, tool: int, variant: int, reask: bool) -> int:
        """The model asks for `tool` while its policy is `variant`, which the call keeps
        (TC-SNAP-1); a later change of the policy reaches only later calls (TC-SNAP-2)."""
        table = self.call_table(tool, variant)
        if self.needs_approval[tool][variant]:
            cs, a, natt = self._fire(table, C_ASKED, "needs_approval"), A_NONE, 0
        else:
            cs, a = self._fire(table, C_ASKED, "start"), self._fire(ATTEMPT, A_NONE, "schedule")
            natt = 1
        policy = variant if self.choices.snapshot_policy else 0
        return self.intern((tool, policy, variant, cs, FK_NONE, natt, 0, a, -1,
                            self.empty_runs, 0, -1, 0, 0, 0, G_ISREASK if reask else 0))

    def _local(self, c: Call, ws: tuple[int, ...], idle_up: tuple[int, ...], fenced: bool,
               orphaned: bool, to_ok: bool, rsk_ok: bool, tool_effects: int,
               tool_changed: int) -> tuple[Local, ...]:
        """The transitions of one call that touch nothing but the call itself (and a budget or
        its tool's ledger count, given as deltas); memoised, since a call and its context recur
        in many states."""
        p = self.choices
        out: list[Local] = []
        cst = c[CS]
        if cst == C_AWAIT:
            table = self.call_table(c[T], c[POL])
            for what, fair in ((StepKind.APPROVE, False), (StepKind.REJECT, False),
                              (StepKind.DEADLINE, True)):
                n = list(c)
                n[CS] = self._fire(table, C_AWAIT, what)
                if what == StepKind.APPROVE:
                    n[G] |= G_APPROVED
                    n[NATT] = 1
                    n[AS] = self._fire(ATTEMPT, A_NONE, "schedule")
                else:
                    n[G] = _bump(n[G], G_RECW_SHIFT, G_RECW_MASK)
                    if what == StepKind.DEADLINE:
                        n[G] |= G_DEADLINE
                out.append((what, -1, self.intern(tuple(n)), (), -1, NO_NOTES, fair))
        elif cst == C_ATTEMPTING:
            a = c[AS]
            if a == A_QUEUED:
                notes: list[str] = []
                n = list(c)
                self._end_attempt(n, E_NOT_REACHED, notes)
                out.append((StepKind.EXPIRE, -1, self.intern(tuple(n)), (), -1, tuple(notes), True))
                if not (fenced and self.single[c[T]][c[POL]]):
                    for w in idle_up:
                        n = list(c)
                        n[AS] = self._fire(ATTEMPT, A_QUEUED, "hand")
                        n[AW] = w
                        n[G] = _bump(n[G], G_HANDS_SHIFT, G_HANDS_MASK)
                        # With the fence on, handing out while an abandoned run of the tool
                        # really goes on breaks A-FENCE (D-6).
                        notes_hand = (("!" + PropertyId.A_FENCE,)
                                      if orphaned and self.single[c[T]][c[POL]] else NO_NOTES)
                        out.append((StepKind.HAND, w, self.intern(tuple(n)), (), -1, notes_hand,
                                    True))
            elif a == A_HANDED:
                if ws[c[AW]] == W_UP:
                    n = list(c)
                    n[AS] = self._fire(ATTEMPT, A_HANDED, "go")
                    g = _bump(n[G], G_RAN_SHIFT, G_RAN_MASK)
                    if p.retry_key_changes and n[NATT] != 1:
                        g |= G_KEYBAD
                    n[G] = g
                    n[RUNS] = self.runset(tuple(sorted(
                        (*self._runsets[c[RUNS]], (c[AW], R_STARTED, c[NATT])))))
                    out.append((StepKind.GO, c[AW], self.intern(tuple(n)), (), -1, NO_NOTES, True))
            elif a in (A_STARTED, A_RUNNING):
                if a == A_STARTED and ws[c[AW]] == W_UP:
                    n = list(c)
                    n[AS] = self._fire(ATTEMPT, A_STARTED, "heartbeat")
                    n[G] |= G_HB
                    out.append((StepKind.HEARTBEAT, c[AW], self.intern(tuple(n)), (), -1, NO_NOTES,
                                True))
                if to_ok:
                    # The run timeout counts from the hand-out, so it may fire before the
                    # worker's first message arrives. The server cannot tell a worker that has
                    # not yet acted on its go-ahead from one whose tool started: the go-ahead
                    # reaches the worker before the cancel, so both are this step after `go`.
                    notes = []
                    n = list(c)
                    self._abandon(n, c[AW])
                    self._end_attempt(n, E_CANCELLED, notes)
                    out.append((StepKind.TIME_OUT, c[AW], self.intern(tuple(n)),
                                ((TO, -1), (FT, -1)), -1, tuple(notes), False))
        runs = self._runsets[c[RUNS]]
        for r, (_, rs, _) in enumerate(runs):
            if rs == R_STARTED:
                if self.effect_of_tool[c[T]] == READ_I:
                    out.append(self._finish(c, ws, r, True))
                else:
                    out.append(self._apply(c, r, tool_effects))
                out.append(self._finish(c, ws, r, False))
            elif rs == R_APPLIED:
                out.append(self._finish(c, ws, r, True))
                out.append(self._finish(c, ws, r, False))
        if (cst in (C_FAILED, C_UNKNOWN)) and not c[RSK] and rsk_ok:
            n = list(c)
            n[RSK] = 1
            new = self._new_call(c[T], tool_changed, reask=True)
            out.append((StepKind.REASK, -1, self.intern(tuple(n)), ((RSKB, -1),), new, NO_NOTES,
                        False))
        return tuple(out)

    def _ws(self, ws: tuple[int, ...], w: int, trigger: str) -> tuple[int, ...]:
        key = (ws, w, trigger)
        hit = self._ws_memo.get(key)
        if hit is None:
            hit = ws[:w] + (self._fire(WORKER, ws[w], trigger),) + ws[w + 1:]
            self._ws_memo[key] = hit
        return hit

    def _apply(self, c: Call, r: int, tool_effects: int) -> Local:
        """A write applies its effect at the tool's service, the ground truth of what ran.

        An idempotent write's service, and an unclassified tool's, drop a repeated idempotency
        key (TC-EFF-IDEM, TC-KEY-3); a non-idempotent write's service does what `--ledger`
        says: applies every write (`plain`), drops a repeated idempotency key (`key`) or drops a
        repeated business key that every call of the tool shares (`business`, D-6).
        """
        runs = list(self._runsets[c[RUNS]])
        w, rs, an = runs[r]
        runs[r] = (w, self._fire(RUN, rs, "apply"), an)
        n = list(c)
        n[RUNS] = self.runset(tuple(sorted(runs)))
        tool = c[T]
        ledger = self.config.ledger
        applies = True
        if self.effect_of_tool[tool] != NONIDEM_I or ledger == "key":
            if not n[G] & G_KEYBAD:  # with another key the service cannot see a repeat
                applies = n[EFF] == 0
                n[EFF] = self._fire(KEYED, n[EFF], "write")
        elif ledger == "business":
            applies = tool_effects == 0
        deltas: tuple[tuple[int, int], ...] = ()
        if applies:
            delta = self._fire(PLAIN, tool_effects, "write") - tool_effects
            if delta:
                deltas = ((TE, delta << (2 * tool)),)
        return (StepKind.APPLY, w, self.intern(tuple(n)), deltas, -1, NO_NOTES, True)

    def _finish(self, c: Call, ws: tuple[int, ...], r: int, ok: bool) -> Local:
        """The tool returns (`ok`) or reports a failure; a cut-off worker holds the result."""
        runs = list(self._runsets[c[RUNS]])
        w, rs, an = runs[r]
        n = list(c)
        notes: list[str] = []
        if ws[w] == W_UP:
            self._fire(RUN, rs, "finish_ok" if ok else "finish_fail")
            del runs[r]
            n[RUNS] = self.runset(tuple(runs))
            self._deliver(n, w, an, ok, notes)
        else:
            runs[r] = (w, self._fire(RUN, rs, "hold_ok" if ok else "hold_fail"), an)
            n[RUNS] = self.runset(tuple(sorted(runs)))
        return (StepKind.FINISH_OK if ok else StepKind.FINISH_FAIL, w, self.intern(tuple(n)), (),
                -1, tuple(notes) if notes else NO_NOTES, True)
