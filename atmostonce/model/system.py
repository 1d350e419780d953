"""The composed system: calls, attempts, workers, runs and ledgers, driven by the environment.

A state is one flat tuple of small integers: the globals (fault budgets, policy versions,
the reconcile job), one number per worker, then one interned id per call. A call is itself
a tuple of integers (see CALL_FIELDS), interned once, so a state hashes and canonicalises in
a fraction of a microsecond. Component state changes go through the tables compiled from the
`transitions` definitions in `machines`; the record a call gets comes from the spec's own rule
(`atmostonce.spec.records.decide`), compiled into a table, so the model checks the spec's rules
against ground truth in an adversarial environment.

Ghost bits (hand count, runs started, results delivered, record writes, approval given, keys
used, how the last attempt ended) are bookkeeping kept apart from the protocol's decisions;
the properties read them, the protocol never does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import permutations
from typing import Final, NamedTuple

from atmostonce.model import machines
from atmostonce.model.config import ModelConfig
from atmostonce.model.tables import Table, compile_machine
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.records import AttemptEnd, FailureKind, Record, decide

# ---------------------------------------------------------------------------------------------
# Compiled component tables and the state numbers the system uses.

CALL_TOOL: Final = compile_machine(machines.CALL_TOOL)
CALL_SINGLE: Final = compile_machine(machines.CALL_SINGLE_ATTEMPT_TOOL)
ATTEMPT: Final = compile_machine(machines.ATTEMPT)
WORKER: Final = compile_machine(machines.WORKER)
RUN: Final = compile_machine(machines.RUN)
KEYED: Final = compile_machine(machines.KEYED_LEDGER)
PLAIN: Final = compile_machine(machines.PLAIN_LEDGER)
TABLES: Final = (CALL_TOOL, CALL_SINGLE, ATTEMPT, WORKER, RUN, KEYED, PLAIN)

assert CALL_TOOL.states == CALL_SINGLE.states
C_ASKED = CALL_TOOL.index["asked"]
C_AWAIT = CALL_TOOL.index["awaiting_approval"]
C_ATTEMPTING = CALL_TOOL.index["attempting"]
C_SUCCEEDED = CALL_TOOL.index["succeeded"]
C_FAILED = CALL_TOOL.index["failed"]
C_REJECTED = CALL_TOOL.index["rejected"]
C_UNKNOWN = CALL_TOOL.index["outcome_unknown"]
RECORD_OF_STATE: Final = {CALL_TOOL.index[r.value]: r for r in Record}

A_NONE = ATTEMPT.index["none"]
A_QUEUED = ATTEMPT.index["queued"]
A_HANDED = ATTEMPT.index["handed"]
A_STARTED = ATTEMPT.index["started"]
A_RUNNING = ATTEMPT.index["running"]
A_OUT: Final = (A_HANDED, A_STARTED, A_RUNNING)

W_UP = WORKER.index["up"]
W_DISC = WORKER.index["disconnected"]
W_CRASHED = WORKER.index["crashed"]
W_DOWN = WORKER.index["down"]

R_STARTED = RUN.index["started"]
R_APPLIED = RUN.index["applied"]
R_HELD_OK = RUN.index["held_ok"]
R_HELD_FAIL = RUN.index["held_failure"]

# How an attempt ended (the ghost LEND field).
E_NONE, E_NOT_REACHED, E_RETURNED, E_TOOL_FAILED, E_LOST, E_LOST_RESTART, E_CANCELLED = range(7)
END_NAMES: Final = ("-", "never reached a worker", "returned", "tool reported a failure",
                    "worker lost", "lost at a server restart", "cancelled (timed out)")
SPEC_END: Final = {
    E_NOT_REACHED: AttemptEnd.NOT_REACHED, E_RETURNED: AttemptEnd.RETURNED,
    E_TOOL_FAILED: AttemptEnd.TOOL_FAILED, E_LOST: AttemptEnd.WORKER_LOST,
    E_LOST_RESTART: AttemptEnd.WORKER_LOST, E_CANCELLED: AttemptEnd.CANCELLED,
}
_END_TRIGGER: Final = {
    E_NOT_REACHED: "expire", E_RETURNED: "return_result", E_TOOL_FAILED: "report_failure",
    E_LOST: "lose", E_LOST_RESTART: "lose", E_CANCELLED: "time_out",
}

FK_NONE = 0
FAILURE_INDEX: Final = {kind: i + 1 for i, kind in enumerate(FailureKind)}
FAILURE_OF_INDEX: Final = {i: kind for kind, i in FAILURE_INDEX.items()}
FK_DID_NOT_RUN = FAILURE_INDEX[FailureKind.DID_NOT_RUN]
FK_MAY_STILL = FAILURE_INDEX[FailureKind.MAY_STILL_BE_RUNNING]

EFFECTS: Final = tuple(EffectClass)
EFFECT_INDEX: Final = {e: i for i, e in enumerate(EFFECTS)}
READ_I = EFFECT_INDEX[EffectClass.READ]
NONIDEM_I = EFFECT_INDEX[EffectClass.NON_IDEMPOTENT_WRITE]

# ---------------------------------------------------------------------------------------------
# State layout.

(T, POL, GPOL, CS, FK, NATT, RCH, AS, AW, RUNS, EFF, ABW, REP, JOBP, RSK, G) = range(16)
CALL_FIELDS: Final = ("tool", "policy", "ask_policy", "call", "failure", "attempts",
                      "reached", "attempt", "attempt_worker", "runs", "ledger",
                      "abandoned_on", "reports", "job_pending", "asked_again", "ghost")
(ASK, RSKB, CR, PT, RS, TO, PC, TV, TE, JOB, JC, FT) = range(12)
NG: Final = 12
GLOBAL_FIELDS: Final = ("asks_left", "reasks_left", "crashes_left", "partitions_left",
                        "restarts_left", "timeouts_left", "policy_changes_left",
                        "changed_tools", "effects_by_tool", "reconcile_running",
                        "reconcile_crashes_left", "faults_left")

# Ghost bits of G.
G_ISREASK = 1
G_HANDS_SHIFT, G_HANDS_MASK = 1, 7
G_OKD = 1 << 4
G_RAN_SHIFT, G_RAN_MASK = 5, 3
G_RECW_SHIFT, G_RECW_MASK = 7, 3
G_APPROVED = 1 << 9
G_KEYBAD = 1 << 10
G_LEND_SHIFT, G_LEND_MASK = 11, 7
G_HB = 1 << 14
G_DEADLINE = 1 << 15  # rejected because the approval deadline passed, not by a person

Call = tuple[int, ...]
Run = tuple[int, int, int]  # (worker, run state, attempt number)
State = tuple[int, ...]
Label = tuple[str, int, int]
# A call-local transition: (kind, worker or -1, the call's new id, (global field, delta)...,
# a new call's id or -1, notes, fair).
Local = tuple[str, int, int, tuple[tuple[int, int], ...], int, tuple[str, ...], bool]
_Emit = Callable[
    [Label, Sequence[int], tuple[int, ...], tuple[int, ...], list[str], bool], None
]


def hands(g: int) -> int:
    return (g >> G_HANDS_SHIFT) & G_HANDS_MASK


def runs_started(g: int) -> int:
    return (g >> G_RAN_SHIFT) & G_RAN_MASK


def record_writes(g: int) -> int:
    return (g >> G_RECW_SHIFT) & G_RECW_MASK


def last_end(g: int) -> int:
    return (g >> G_LEND_SHIFT) & G_LEND_MASK


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    """For `perm[new] = old`, the map old -> new."""
    inverse = [0] * len(perm)
    for new, old in enumerate(perm):
        inverse[old] = new
    return tuple(inverse)


def _bump(g: int, shift: int, mask: int) -> int:
    return g + (1 << shift) if (g >> shift) & mask < mask else g


def decision_table() -> dict[tuple[int, int, bool, bool], tuple[str, int]]:
    """(effect, how the attempt ended, attempts remain, an earlier attempt reached a worker) ->
    the call machine's trigger and failure kind, taken from the spec's `decide`."""
    names = {
        FailureKind.TOOL_ERROR: "tool_failed", FailureKind.DID_NOT_RUN: "did_not_run",
        FailureKind.MAY_HAVE_RUN: "may_have_run", FailureKind.MAY_STILL_BE_RUNNING: "may_still_run",
    }
    table: dict[tuple[int, int, bool, bool], tuple[str, int]] = {}
    for effect in EFFECTS:
        for end_kind, end in SPEC_END.items():
            for more in (False, True):
                for reached in (False, True):
                    d = decide(effect, end, 1 if more else 2, 2, reached)
                    if d.retry:
                        entry = ("retry", FK_NONE)
                    elif d.record is Record.SUCCEEDED:
                        entry = ("returned", FK_NONE)
                    elif d.record is Record.OUTCOME_UNKNOWN:
                        entry = ("unknown", FK_NONE)
                    else:
                        assert d.failure is not None
                        entry = (names[d.failure], FAILURE_INDEX[d.failure])
                    table[(EFFECT_INDEX[effect], end_kind, more, reached)] = entry
    return table


@dataclass(frozen=True)
class Protocol:
    """The modelled executor's protocol choices; each is a knob a model mutant turns wrong."""

    call_tool: Table = CALL_TOOL
    call_single: Table = CALL_SINGLE
    decisions: dict[tuple[int, int, bool, bool], tuple[str, int]] = field(
        default_factory=decision_table)
    single_max_attempts: int = 1
    reach_at_hand: bool = True
    self_fence: bool = True
    retry_after_unknown: bool = False
    approval_default: bool = True
    snapshot_policy: bool = True
    rehand_lost: bool = False
    late_result_overwrites: bool = False
    retry_key_changes: bool = False
    fence_checked: bool = True
    reconcile_reads_history: bool = True
    decide_lost: bool = True


class ModelError(RuntimeError):
    """The model tried a transition its own machines forbid: a bug in the model or a mutant."""


class Successor(NamedTuple):
    """One transition: its label, the next (concrete) state, notes and whether it is fair.

    A fair action is one the environment cannot hold back for ever (timers, workers doing
    their work, the reconcile job); faults, asks and people's answers are optional.
    """

    label: Label
    state: State
    notes: tuple[str, ...]
    fair: bool


_NO_NOTES: tuple[str, ...] = ()


class System:
    """The composed model for one configuration: initial state, successors, canonical form and
    the accessors the properties and traces read."""

    def __init__(self, config: ModelConfig, protocol: Protocol | None = None) -> None:
        self.config = config
        self.protocol = protocol or Protocol()
        p = self.protocol
        self.workers = config.workers
        self.n_tools = len(config.tools)
        self.truth = tuple((t.variant(False), t.variant(True)) for t in config.tools)
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

    # -- interning ------------------------------------------------------------------------------

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

    @property
    def distinct_calls(self) -> int:
        return len(self._calls)

    # -- initial state and canonical form ---------------------------------------------------------

    def initial(self) -> State:
        c = self.config
        return (c.calls, c.reasks, c.crashes, c.partitions, c.restarts, c.timeouts,
                c.policy_changes, 0, 0, 0, c.reconcile_crashes, c.faults) + (W_UP,) * c.workers

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

    # -- helpers ----------------------------------------------------------------------------------

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
        by_id = {id(t): t for t in (*TABLES, self.protocol.call_tool, self.protocol.call_single)}
        return {(by_id[t].machine.name, by_id[t].states[s], trig) for t, s, trig in self.fired}

    def call_table(self, tool: int, policy: int) -> Table:
        p = self.protocol
        return p.call_single if self.single[tool][policy] else p.call_tool

    def _end_attempt(self, c: list[int], end: int, notes: list[str]) -> None:
        """The current attempt of call `c` (a list, changed in place) ended with `end`; the
        spec's rule decides between another attempt and the record."""
        p = self.protocol
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
        decision, fk = p.decisions[(effect, judged, natt < limit, reached_before)]
        table = p.call_single if single else p.call_tool
        c[CS] = self._fire(table, c[CS], decision)
        g = (c[G] & ~(G_LEND_MASK << G_LEND_SHIFT) & ~G_HB) | (end << G_LEND_SHIFT)
        c[RCH] = 1 if reached_before or reached_now else 0
        c[AW] = -1
        if decision == "retry":
            if end in (E_RETURNED, E_TOOL_FAILED):
                notes.append("!A-RETRY-CLASSES")
            if effect == READ_I and end in (E_LOST, E_LOST_RESTART):
                notes.append("S-READ-RETRY-AFTER-LOSS")
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
        if self.protocol.late_result_overwrites and ok and c[CS] in (C_FAILED, C_UNKNOWN):
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
        policy = variant if self.protocol.snapshot_policy else 0
        return self.intern((tool, policy, variant, cs, FK_NONE, natt, 0, a, -1,
                            self.empty_runs, 0, -1, 0, 0, 0, G_ISREASK if reask else 0))

    # -- successors -------------------------------------------------------------------------------

    def successors(self, state: State) -> list[Successor]:
        """Every transition enabled in `state` (concrete or canonical)."""
        out: list[Successor] = []
        p = self.protocol
        nw = self.workers
        base = NG + nw
        gl = state[:NG]
        ws = state[NG:base]
        ids = state[base:]
        calls = [self._calls[cid] for cid in ids]

        def emit(label: Label, gl2: Sequence[int], ws2: tuple[int, ...],
                 new_ids: tuple[int, ...], notes: list[str], fair: bool) -> None:
            out.append(Successor(label, tuple(gl2) + ws2 + new_ids,
                                 tuple(notes) if notes else _NO_NOTES, fair))

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
                emit(("crash", w, -1), gl2, self._ws(ws, w, "crash"),
                     self._each(ids, "crash", w, []), [], False)
            if st == W_UP:
                if holding and faults and gl[PT] > 0:
                    gl2 = list(gl)
                    gl2[PT] -= 1
                    gl2[FT] -= 1
                    emit(("disconnect", w, -1), gl2, self._ws(ws, w, "disconnect"), ids, [],
                         False)
            elif st == W_DISC:
                self._emit_reconnect(emit, gl, ws, ids, w)
                self._emit_detect(emit, gl, ws, ids, w)
            elif st == W_CRASHED:
                self._emit_detect(emit, gl, ws, ids, w)
            elif st == W_DOWN:
                emit(("rejoin", w, -1), gl, self._ws(ws, w, "rejoin"), ids, [], True)

        if gl[ASK] > 0:
            for t in range(self.n_tools):
                gl2 = list(gl)
                gl2[ASK] -= 1
                new = self._new_call(t, gl2[TV] >> t & 1, False)
                emit(("ask", t, -1), gl2, ws, ids + (new,), [], False)
        if gl[RS] > 0 and gl[FT] > 0 and any(c[AS] in A_OUT for c in calls):
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
                emit(("change_policy", t, -1), gl2, ws, new_ids, [], False)
        if not in_flight:
            self._emit_reconcile(emit, gl, ws, ids, calls)
        return out

    def _local(self, c: Call, ws: tuple[int, ...], idle_up: tuple[int, ...], fenced: bool,
               orphaned: bool, to_ok: bool, rsk_ok: bool, tool_effects: int,
               tool_changed: int) -> tuple[Local, ...]:
        """The transitions of one call that touch nothing but the call itself (and a budget or
        its tool's ledger count, given as deltas); memoised, since a call and its context recur
        in many states."""
        p = self.protocol
        out: list[Local] = []
        cst = c[CS]
        if cst == C_AWAIT:
            table = self.call_table(c[T], c[POL])
            for what, fair in (("approve", False), ("reject", False), ("deadline", True)):
                n = list(c)
                n[CS] = self._fire(table, C_AWAIT, what)
                if what == "approve":
                    n[G] |= G_APPROVED
                    n[NATT] = 1
                    n[AS] = self._fire(ATTEMPT, A_NONE, "schedule")
                else:
                    n[G] = _bump(n[G], G_RECW_SHIFT, G_RECW_MASK)
                    if what == "deadline":
                        n[G] |= G_DEADLINE
                out.append((what, -1, self.intern(tuple(n)), (), -1, _NO_NOTES, fair))
        elif cst == C_ATTEMPTING:
            a = c[AS]
            if a == A_QUEUED:
                notes: list[str] = []
                n = list(c)
                self._end_attempt(n, E_NOT_REACHED, notes)
                out.append(("expire", -1, self.intern(tuple(n)), (), -1, tuple(notes), True))
                if not (fenced and self.single[c[T]][c[POL]]):
                    for w in idle_up:
                        n = list(c)
                        n[AS] = self._fire(ATTEMPT, A_QUEUED, "hand")
                        n[AW] = w
                        n[G] = _bump(n[G], G_HANDS_SHIFT, G_HANDS_MASK)
                        # With the fence on, handing out while an abandoned run of the tool
                        # really goes on breaks A-FENCE (D-6).
                        notes_hand = ("!A-FENCE",) if orphaned and self.single[c[T]][c[POL]] \
                            else _NO_NOTES
                        out.append(("hand", w, self.intern(tuple(n)), (), -1, notes_hand, True))
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
                    out.append(("go", c[AW], self.intern(tuple(n)), (), -1, _NO_NOTES, True))
            elif a in (A_STARTED, A_RUNNING):
                if a == A_STARTED and ws[c[AW]] == W_UP:
                    n = list(c)
                    n[AS] = self._fire(ATTEMPT, A_STARTED, "heartbeat")
                    n[G] |= G_HB
                    out.append(("heartbeat", c[AW], self.intern(tuple(n)), (), -1, _NO_NOTES,
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
                    out.append(("time_out", c[AW], self.intern(tuple(n)), ((TO, -1), (FT, -1)),
                                -1, tuple(notes), False))
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
            out.append(("reask", -1, self.intern(tuple(n)), ((RSKB, -1),), new, _NO_NOTES,
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
        return ("apply", w, self.intern(tuple(n)), deltas, -1, _NO_NOTES, True)

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
        return ("finish_ok" if ok else "finish_fail", w, self.intern(tuple(n)), (), -1,
                tuple(notes) if notes else _NO_NOTES, True)

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
        p = self.protocol
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
                        notes.append("S-LOST-BEFORE-HEARTBEAT")
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
        emit(("detect", w, -1), gl, self._ws(ws, w, "detect"), new_ids, notes, True)

    def _emit_reconnect(self, emit: _Emit, gl: tuple[int, ...], ws: tuple[int, ...],
                        ids: tuple[int, ...], w: int) -> None:
        """The cut-off worker's connection resumes: held results and run endings arrive."""
        notes: list[str] = []
        new_ids = self._each(ids, "reconnect", w, notes)
        emit(("reconnect", w, -1), gl, self._ws(ws, w, "reconnect"), new_ids, notes, False)

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
        emit(("restart", -1, -1), gl2, ws2, new_ids, notes, False)

    def _emit_reconcile(self, emit: _Emit, gl: tuple[int, ...], ws: tuple[int, ...],
                        ids: tuple[int, ...], calls: list[Call]) -> None:
        """The reconcile job (TC-RCN-ONCE) runs once the turn's calls have records: it reads
        the history, then sends one report per unknown call no user message names yet. It
        may also crash right after one send, before the send returns; it is then simply run
        again."""
        reads = self.protocol.reconcile_reads_history
        todo = [i for i, c in enumerate(calls)
                if c[CS] == C_UNKNOWN and (c[REP] == 0 or (not reads and c[REP] < 2))]
        if not todo:
            return
        sent = list(ids)
        for i in todo:
            c = calls[i]
            sent[i] = self.intern(c[:REP] + (c[REP] + 1,) + c[REP + 1:])
        emit(("reconcile", -1, -1), gl, ws, tuple(sent), [], True)
        if gl[JC] > 0:
            gl2 = list(gl)
            gl2[JC] -= 1
            for first in todo:
                c = calls[first]
                crashed = ids[:first] + (self.intern(c[:REP] + (c[REP] + 1,) + c[REP + 1:]),) \
                    + ids[first + 1:]
                emit(("reconcile_crash", first, -1), gl2, ws, crashed, [], False)
