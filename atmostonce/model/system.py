"""The composed system: calls, attempts, workers, runs and ledgers, driven by the environment.

Component state changes go through the tables compiled from the `transitions` definitions in
`machines`; the record a call gets comes from the spec's own rule
(`atmostonce.spec.records.decide`), compiled into a table, so the model checks the spec's rules
against ground truth in an adversarial environment. The state encoding is in `layout`, the
interned calls in `interning`, the canonical form in `symmetry`, one call's transitions in
`call_steps` and worker-level events in `worker_events`; `System` composes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations
from typing import NamedTuple

from atmostonce.model.call_steps import NO_NOTES, Local
from atmostonce.model.choices import ModelChoices, under_choice
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import (
    A_OUT,
    AS,
    ASK,
    C_AWAIT,
    CR,
    CS,
    EFFECT_INDEX,
    FT,
    NG,
    PC,
    POL,
    PT,
    RS,
    RSKB,
    TE,
    TO,
    TV,
    W_CRASHED,
    W_DISC,
    W_DOWN,
    W_UP,
    Call,
    Label,
    Run,
    State,
    T,
)
from atmostonce.model.symmetry import Symmetry
from atmostonce.model.worker_events import WorkerEvents
from atmostonce.spec.step_kinds import StepKind


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    """For `perm[new] = old`, the map old -> new."""
    inverse = [0] * len(perm)
    for new, old in enumerate(perm):
        inverse[old] = new
    return tuple(inverse)


class Successor(NamedTuple):
    """One transition: its label, the next (concrete) state, notes and whether it is fair.

    A fair action is one the environment cannot hold back for ever (timers, workers doing
    their work, the reconcile job); faults, asks and people's answers are optional.
    """

    label: Label
    state: State
    notes: tuple[str, ...]
    fair: bool


class System(Symmetry, WorkerEvents):
    """The composed model for one configuration: initial state, successors, canonical form and
    the accessors the properties and traces read."""

    def __init__(self, config: ModelConfig, choices: ModelChoices | None = None) -> None:
        self.config = config
        self.choices = choices or ModelChoices()
        p = self.choices
        self.decisions = under_choice(p.decisions, config.cancel_records_failed)
        """The record rule under the executor's declared choice of D-4."""
        self.workers = config.workers
        self.n_tools = len(config.tools)
        self.truth = tuple((config.policy_of(t, False), config.policy_of(t, True))
                           for t in config.tools)
        self.effect_of_tool = tuple(EFFECT_INDEX[t.effect] for t in config.tools)
        self.policy_effect = tuple(
            (EFFECT_INDEX[v0.effect], EFFECT_INDEX[v1.effect]) for v0, v1 in self.truth
        )
        self.single = tuple(
            (not v0.retries_allowed, not v1.retries_allowed) for v0, v1 in self.truth
        )
        if p.approval_default:
            self.needs_approval = tuple(
                (v0.requires_approval, v1.requires_approval) for v0, v1 in self.truth
            )
        else:  # the mutant: only an explicit requires_approval=True makes a call wait
            self.needs_approval = tuple(
                (t.policy.requires_approval is True, v1.requires_approval
                 and t.policy.requires_approval is not False)
                for t, (_, v1) in zip(config.tools, self.truth, strict=True)
            )
        self.fired: set[tuple[int, int, str]] = set()
        self._calls: list[Call] = []
        self._call_ids: dict[Call, int] = {}
        self._runsets: list[tuple[Run, ...]] = []
        self._runset_ids: dict[tuple[Run, ...], int] = {}
        self._refs: list[tuple[tuple[int, int], ...]] = []
        self._info: list[tuple[int, int, int, int, int]] = []
        self._ws_memo: dict[tuple[tuple[int, ...], int, str], tuple[int, ...]] = {}
        self._loads2: list[tuple[int, int]] = []
        self._all_perms = list(permutations(range(config.workers)))
        self._inverse = [_inverse(p) for p in self._all_perms]
        self._renamed: list[list[int]] = [[] for _ in self._all_perms]
        self._perms: dict[tuple[tuple[int, int], ...], list[int]] = {}
        self.empty_runs = self.runset(())
        self._local_memo: dict[tuple[object, ...], tuple[Local, ...]] = {}
        self._event_memo: dict[tuple[str, int, int], tuple[int, tuple[str, ...]]] = {}

    def initial(self) -> State:
        c = self.config
        return (c.calls, c.reasks, c.crashes, c.partitions, c.restarts, c.timeouts,
                c.policy_changes, 0, 0, 0, c.reconcile_crashes, c.faults) + (W_UP,) * c.workers

    # -- successors -------------------------------------------------------------------------------

    def successors(self, state: State) -> list[Successor]:
        """Every transition enabled in `state` (concrete or canonical)."""
        out: list[Successor] = []
        p = self.choices
        nw = self.workers
        base = NG + nw
        gl = state[:NG]
        ws = state[NG:base]
        ids = state[base:]
        calls = [self._calls[cid] for cid in ids]

        def emit(label: Label, gl2: Sequence[int], ws2: tuple[int, ...],
                 new_ids: tuple[int, ...], notes: list[str], fair: bool) -> None:
            out.append(Successor(label, tuple(gl2) + ws2 + new_ids,
                                 tuple(notes) if notes else NO_NOTES, fair))

        busy = abandoned_tools = named = in_flight = orphan_tools = 0
        info = self._info
        for cid in ids:
            b, a, nm, fl, orph = info[cid]
            busy |= b
            abandoned_tools |= a
            named |= nm
            in_flight |= fl
            orphan_tools |= orph
        # Idle workers that are up and named by no abandoned run are interchangeable, so a
        # queued attempt is offered to the first of them only (and to every named one).
        idle_up: list[int] = []
        for w in range(nw):
            free = ws[w] == W_UP and not busy >> w & 1
            if free and (named >> w & 1 or not any(not named >> v & 1 for v in idle_up)):
                idle_up.append(w)
        fence = self.config.fence and p.fence_checked

        idle_t = tuple(idle_up)
        to_ok = gl[TO] > 0 and gl[FT] > 0
        rsk_ok = gl[RSKB] > 0
        memo = self._local_memo
        for i, c in enumerate(calls):
            cid = ids[i]
            tool = c[T]
            fenced = fence and bool(abandoned_tools >> tool & 1)
            orphaned = self.config.fence and bool(orphan_tools >> tool & 1)
            key = (cid, ws, idle_t, fenced, orphaned, to_ok, rsk_ok, gl[TE] >> (2 * tool) & 3,
                   gl[TV] >> tool & 1)
            local = memo.get(key)
            if local is None:
                local = self._local(c, ws, idle_t, fenced, orphaned, to_ok, rsk_ok,
                                    gl[TE] >> (2 * tool) & 3, gl[TV] >> tool & 1)
                memo[key] = local
            for kind, b, new_cid, deltas, extra, notes, fair in local:
                if deltas:
                    gl2 = list(gl)
                    for index, delta in deltas:
                        gl2[index] += delta
                    head: tuple[int, ...] = tuple(gl2) + ws
                else:
                    head = gl + ws
                new_ids = ids[:i] + (new_cid,) + ids[i + 1:]
                if extra >= 0:
                    new_ids += (extra,)
                out.append(Successor((kind, i, b), head + new_ids, notes, fair))

        # Faults strike workers that hold work: on an idle worker a fault only delays work,
        # which an attempt that expires unreached already covers.
        faults = gl[FT] > 0
        for w in range(nw):
            st = ws[w]
            holding = busy >> w & 1
            if (st in (W_UP, W_DISC)) and holding and faults and gl[CR] > 0:
                gl2 = list(gl)
                gl2[CR] -= 1
                gl2[FT] -= 1
                emit((StepKind.CRASH, w, -1), gl2, self._ws(ws, w, "crash"),
                     self._each(ids, "crash", w, []), [], False)
            if st == W_UP:
                if holding and faults and gl[PT] > 0:
                    gl2 = list(gl)
                    gl2[PT] -= 1
                    gl2[FT] -= 1
                    emit((StepKind.DISCONNECT, w, -1), gl2, self._ws(ws, w, "disconnect"), ids, [],
                         False)
            elif st == W_DISC:
                self._emit_reconnect(emit, gl, ws, ids, w)
                self._emit_detect(emit, gl, ws, ids, w)
            elif st == W_CRASHED:
                self._emit_detect(emit, gl, ws, ids, w)
            elif st == W_DOWN:
                emit((StepKind.REJOIN, w, -1), gl, self._ws(ws, w, "rejoin"), ids, [], True)

        if gl[ASK] > 0:
            for t in range(self.n_tools):
                gl2 = list(gl)
                gl2[ASK] -= 1
                new = self._new_call(t, gl2[TV] >> t & 1, False)
                emit((StepKind.ASK, t, -1), gl2, ws, ids + (new,), [], False)
        waiting = self.config.restart_while_waiting
        if gl[RS] > 0 and gl[FT] > 0 and any(c[AS] in A_OUT or (waiting and c[CS] == C_AWAIT)
                                             for c in calls):
            self._emit_restart(emit, gl, ws, ids)
        if gl[PC] > 0:
            # A change matters only while a call of the tool is in flight: that call must keep
            # its snapshot (TC-SNAP-1) and later calls must get the new policy (TC-SNAP-2).
            for t in range(self.n_tools):
                if not in_flight >> t & 1:
                    continue
                gl2 = list(gl)
                gl2[PC] -= 1
                gl2[TV] ^= 1 << t
                new_ids = ids
                if not p.snapshot_policy:  # the mutant: asked calls follow the new policy
                    new_ids = tuple(
                        self.intern(c[:POL] + (gl2[TV] >> t & 1,) + c[POL + 1:])
                        if c[T] == t else cid
                        for cid, c in zip(ids, calls, strict=True)
                    )
                emit((StepKind.CHANGE_POLICY, t, -1), gl2, ws, new_ids, [], False)
        if not in_flight:
            self._emit_reconcile(emit, gl, ws, ids, calls)
        return out
