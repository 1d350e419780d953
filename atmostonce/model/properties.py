"""The properties of `atmostonce.spec.properties`, evaluated on model states.

Always-properties are predicates on every reachable state (ghost fields make the history they
need visible in the state); sometimes-properties are witnessed by a reachable state or by a
transition's note; eventually-properties are checked on quiescent states, those no fair action
leaves (see `Successor.fair`), which every fair path reaches because the explorer also checks
that `rank` falls on every transition, so the state graph has no cycle.

A call's own checks depend on the call alone, and calls are interned, so each distinct call is
judged once.
"""

from __future__ import annotations

from dataclasses import dataclass

from atmostonce.model import layout as s
from atmostonce.model.layout import Call, State
from atmostonce.model.system import System
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.properties import (
    RECORD_WITNESS_PREFIX,
    RECORDS_ALLOWED,
    Kind,
    PropertyId,
    of_kind,
    record_witness_id,
)
from atmostonce.spec.records import FailureKind, Record

INFRASTRUCTURE_ENDS = (s.E_NOT_REACHED, s.E_LOST, s.E_LOST_RESTART, s.E_CANCELLED)
RECORDS = s.RECORD_OF_STATE


@dataclass(frozen=True)
class ModelViolation:
    property: str
    call: int
    message: str


class Properties:
    """The properties for one system, with the spec's truth about every tool precomputed."""

    def __init__(self, system: System) -> None:
        self.system = system
        self.config = system.config
        self.truth = system.truth
        self.max_attempts = system.config.max_attempts
        self.cancel_fails = system.config.cancel_records_failed
        """The executor's declared choice of D-4, by which its records are judged."""
        self.wanted = frozenset(self._wanted())
        self._call_checks: dict[int, tuple[tuple[str, str], ...]] = {}
        self._call_witness: dict[int, tuple[str, ...]] = {}
        self._call_rank: dict[int, int] = {}

    def _wanted(self) -> set[str]:
        """The sometimes-properties this configuration can witness."""
        cfg = self.config
        policies = [cfg.policy_of(t, False) for t in cfg.tools]
        if cfg.policy_changes:
            policies += [cfg.policy_of(t, True) for t in cfg.tools]
        effects = {v.effect for v in policies}
        wanted = {p.id for p in of_kind(Kind.SOMETIMES)
                  if not p.id.startswith(RECORD_WITNESS_PREFIX)}
        for v in policies:
            for record in RECORDS_ALLOWED[v.effect]:
                if record is not Record.REJECTED or v.requires_approval:
                    wanted.add(record_witness_id(v.effect, record))
        single_tools = any(not cfg.policy_of(t, False).retries_allowed for t in cfg.tools)
        if cfg.fence or not single_tools or not cfg.reasks or not cfg.timeouts or not cfg.faults:
            wanted.discard(PropertyId.S_DOUBLE_RUN)
        if EffectClass.READ not in effects or cfg.max_attempts < 2 or not cfg.faults:
            wanted.discard(PropertyId.S_READ_RETRY_AFTER_LOSS)
        if not cfg.restarts or not cfg.faults:
            wanted.discard(PropertyId.S_UNKNOWN_NEVER_RAN)
        if not (cfg.crashes or cfg.partitions) or not cfg.faults:
            wanted.discard(PropertyId.S_LOST_BEFORE_HEARTBEAT)
        return wanted

    # -- always ---------------------------------------------------------------------------------

    def violations(self, state: State) -> list[ModelViolation]:
        found: list[ModelViolation] = []
        base = s.NG + self.system.workers
        memo = self._call_checks
        for i, cid in enumerate(state[base:]):
            checks = memo.get(cid)
            if checks is None:
                checks = self._judge(self.system.call(cid))
                memo[cid] = checks
            for pid, message in checks:
                found.append(ModelViolation(pid, i, message))
        return found

    def _judge(self, c: Call) -> tuple[tuple[str, str], ...]:
        """Every always-property one call can break on its own, with what it shows."""
        truth = self.truth[c[s.T]][c[s.GPOL]]
        g = c[s.G]
        cs = c[s.CS]
        natt = c[s.NATT]
        handed = s.hands(g)
        ran = s.runs_started(g)
        single = not truth.retries_allowed
        bad: list[tuple[str, str]] = []
        if handed > natt:
            bad.append((PropertyId.A_ONE_WORKER,
                        f"attempts were handed to a worker {handed} times for {natt} attempt(s)"))
        if single and natt > 1:
            bad.append((PropertyId.A_ONE_ATTEMPT,
                        f"{_a(truth.effect.value)} call got {natt} attempts"))
        if cs == s.C_UNKNOWN and c[s.AS] != s.A_NONE:
            bad.append((PropertyId.A_NO_ATTEMPT_AFTER_UNKNOWN,
                        "an attempt was scheduled after the call recorded outcome_unknown"))
        if s.record_writes(g) > 1:
            bad.append((PropertyId.A_ONE_RECORD,
                        f"the record was written {s.record_writes(g)} times"))
        if c[s.FK] == s.FK_DID_NOT_RUN and (handed or ran):
            bad.append((PropertyId.A_DID_NOT_RUN_TRUE,
                        f"recorded 'the tool did not run' after {handed} hand-out(s) to a "
                        f"worker and {ran} run(s) of the tool"))
        if g & s.G_HISTORY_NOT_RUN and (handed or ran):
            bad.append((PropertyId.A_DID_NOT_RUN_TRUE,
                        "reconcile reported from the Flow's history that the tool did not run, "
                        f"after {handed} hand-out(s) to a worker and {ran} run(s) of the tool"))
        if cs == s.C_SUCCEEDED and not g & s.G_OKD:
            bad.append((PropertyId.A_SUCCEEDED_RETURNED,
                        "recorded succeeded, but no result was returned"))
        if cs == s.C_UNKNOWN and not handed:
            bad.append((PropertyId.A_UNKNOWN_REACHED,
                        "recorded outcome_unknown, though no attempt reached a worker"))
        if cs in RECORDS and cs != s.C_REJECTED:
            bad.extend(self._exhausted(c, truth.effect))
        meaning = self._meaning(c, truth.effect)
        if meaning:
            bad.append((PropertyId.A_RECORD_MEANING, meaning))
        if g & s.G_KEYBAD:
            bad.append((PropertyId.A_SAME_KEY, "an attempt passed a different idempotency key"))
        if natt and truth.requires_approval and not g & s.G_APPROVED:
            bad.append((PropertyId.A_APPROVAL, "an attempt was made without the approval it needs"))
        if cs == s.C_REJECTED and (natt or ran):
            bad.append((PropertyId.A_APPROVAL, "a rejected call was attempted"))
        waited = bool(g & s.G_APPROVED) or cs == s.C_AWAIT
        if waited != truth.requires_approval and cs != s.C_REJECTED:
            needed = "required" if truth.requires_approval else "did not require"
            bad.append((PropertyId.A_POLICY_SNAPSHOT,
                        f"the call {'waited' if waited else 'did not wait'} for approval, but "
                        f"the policy when it was asked {needed} it"))
        if single:
            runs = self.system.runs(c[s.RUNS])
            if len(runs) > 1:
                bad.append((PropertyId.A_DOUBLE_RUN_SHAPE,
                            "two runs of one single-attempt call overlap"))
            if runs and cs in RECORDS and s.last_end(g) not in (s.E_CANCELLED, s.E_LOST_RESTART):
                bad.append((PropertyId.A_DOUBLE_RUN_SHAPE,
                            "a run goes on after its call was recorded "
                            f"({s.END_NAMES[s.last_end(g)]}), though the engine never gave up "
                            "on it while its worker was alive"))
        if c[s.REP] > 1:
            kind = "unknown" if cs == s.C_UNKNOWN else "cancelled"
            bad.append((PropertyId.E_RECONCILE_ONCE,
                        f"the {kind} call was reported {c[s.REP]} times"))
        return tuple(bad)

    def _exhausted(self, c: Call, effect: EffectClass) -> list[tuple[str, str]]:
        """A-EXHAUSTED-RECORD: out of attempts after a reach, a read records failed and any other
        class outcome_unknown, a cancelled single attempt too (D-4); under D-4's other choice a
        cancelled single attempt records failed (F-7)."""
        end = s.last_end(c[s.G])
        if end not in INFRASTRUCTURE_ENDS or not s.hands(c[s.G]):
            return []
        single = effect in (EffectClass.NON_IDEMPOTENT_WRITE, EffectClass.UNCLASSIFIED)
        if not single and c[s.NATT] < self.max_attempts:
            return []
        if effect is EffectClass.READ or (self.cancel_fails and single
                                           and end == s.E_CANCELLED):
            expected = s.C_FAILED
        else:
            expected = s.C_UNKNOWN
        if c[s.CS] == expected:
            return []
        return [(PropertyId.A_EXHAUSTED_RECORD,
                 f"{_a(effect.value)} call out of attempts after a worker reach "
                 f"({s.END_NAMES[end]}) recorded {RECORDS[c[s.CS]].value}, not "
                 f"{RECORDS[expected].value}")]

    def _meaning(self, c: Call, effect: EffectClass) -> str:
        """A-RECORD-MEANING: what the record tells the model is true of the call (TC-REC-SUCC,
        TC-REC-FAIL, TC-REC-REJ, TC-REC-UNK), but for the failed records the page's table does
        not cover: a read out of attempts after a reach (TC-REC-EXHAUST-READ) and, only under
        D-4's other choice, a cancelled single attempt, whose write may still land (F-7).
        Empty when it holds."""
        cs = c[s.CS]
        g = c[s.G]
        handed = s.hands(g)
        if cs == s.C_SUCCEEDED and not g & s.G_OKD:
            return "recorded succeeded, but the tool returned no result"
        if cs == s.C_UNKNOWN and not handed:
            return "recorded outcome_unknown, though no attempt reached a worker"
        if cs == s.C_REJECTED and (c[s.NATT] or s.runs_started(g)):
            return "recorded rejected, but the call was attempted"
        if cs != s.C_FAILED:
            return ""
        end = s.last_end(g)
        reported = end == s.E_TOOL_FAILED
        if c[s.FK] == s.FAILURE_INDEX[FailureKind.TOOL_ERROR] and not reported:
            return (f"recorded failed as the tool's own failure, but the attempt "
                    f"{s.END_NAMES[end]}")
        if reported or not (handed or s.runs_started(g)):
            return ""
        if effect is EffectClass.READ:
            return ""
        single = effect in (EffectClass.NON_IDEMPOTENT_WRITE, EffectClass.UNCLASSIFIED)
        if self.cancel_fails and single and end == s.E_CANCELLED:
            return ""
        return (f"recorded failed after an attempt reached a worker ({s.END_NAMES[end]}): the "
                "tool reported no failure and may have run")

    # -- sometimes ------------------------------------------------------------------------------

    def witnessed(self, state: State) -> set[str]:
        seen: set[str] = set()
        orphan_tools = 0
        reask_tools = 0
        base = s.NG + self.system.workers
        memo = self._call_witness
        for cid in state[base:]:
            marks = memo.get(cid)
            if marks is None:
                marks = self._witness(self.system.call(cid))
                memo[cid] = marks
            for mark in marks:
                if mark == "orphan":
                    orphan_tools |= 1 << self.system.call(cid)[s.T]
                elif mark == "reask-running":
                    reask_tools |= 1 << self.system.call(cid)[s.T]
                else:
                    seen.add(mark)
        if orphan_tools & reask_tools:
            seen.add(PropertyId.S_DOUBLE_RUN)
        return seen

    def _witness(self, c: Call) -> tuple[str, ...]:
        """What one call witnesses: its record for its class, an unknown call whose tool never
        ran though its history shows the reach (D-8's restart case, which reconcile must ask
        the service about, TC-RCN-ASK), and its part in a double run."""
        marks: list[str] = []
        cs = c[s.CS]
        record = RECORDS.get(cs)
        truth = self.truth[c[s.T]][c[s.GPOL]]
        if record is not None:
            marks.append(record_witness_id(truth.effect, record))
            if cs == s.C_UNKNOWN and not s.runs_started(c[s.G]):
                marks.append(PropertyId.S_UNKNOWN_NEVER_RAN)
        if not truth.retries_allowed and self.system.runs(c[s.RUNS]):
            if record is not None and s.last_end(c[s.G]) == s.E_CANCELLED:
                marks.append("orphan")
            elif record is None and c[s.G] & s.G_ISREASK:
                marks.append("reask-running")
        return tuple(marks)

    # -- eventually -----------------------------------------------------------------------------

    def quiescent_violations(self, state: State) -> list[ModelViolation]:
        """Where no fair action is left, every call has a record and every unknown call has
        been reported exactly once."""
        found: list[ModelViolation] = []
        for i, c in enumerate(self.system.calls_of(state)):
            if c[s.CS] not in RECORDS:
                found.append(ModelViolation(PropertyId.E_EVERY_CALL_RECORDED, i,
                                            "the call is stuck without a record"))
            elif self.system.reconciled(c) and c[s.REP] != 1:
                found.append(ModelViolation(PropertyId.E_RECONCILE_ONCE, i,
                                            f"the unknown call was reported {c[s.REP]} times"))
        return found

    # -- the rank -------------------------------------------------------------------------------

    def rank(self, state: State) -> int:
        """A measure every transition strictly decreases, which the explorer checks on every
        edge: budgets first, then each call's remaining work, each worker's way back to `up`.
        It proves the state graph has no cycle."""
        gl = state[: s.NG]
        total = (gl[s.ASK] + gl[s.RSKB] + gl[s.CR] + gl[s.PT] + gl[s.RS] + gl[s.TO] + gl[s.PC]
                 + gl[s.JC] + gl[s.FT]) * _BUDGET_WEIGHT
        nw = self.system.workers
        for st in state[s.NG: s.NG + nw]:
            total += _WORKER_RANK[st]
        memo = self._call_rank
        for cid in state[s.NG + nw:]:
            r = memo.get(cid)
            if r is None:
                r = self._rank_call(self.system.call(cid))
                memo[cid] = r
            total += r
        return total

    def _rank_call(self, c: Call) -> int:
        limit = self.max_attempts
        cs = c[s.CS]
        r = 0
        if cs == s.C_AWAIT:
            r = limit * 20 + 14
        elif cs == s.C_ATTEMPTING:
            r = (limit - c[s.NATT]) * 20 + _ATTEMPT_RANK[c[s.AS]]
        elif self.system.reconciled(c):
            r = 2 - c[s.REP]
        for _, rs, _ in self.system.runs(c[s.RUNS]):
            r += _RUN_RANK[rs]
        return r


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


_BUDGET_WEIGHT = 1_000_000
_ATTEMPT_RANK = {s.A_NONE: 0, s.A_QUEUED: 13, s.A_HANDED: 12, s.A_STARTED: 8, s.A_RUNNING: 7}
_RUN_RANK = {s.R_STARTED: 3, s.R_APPLIED: 2, s.R_HELD_OK: 1, s.R_HELD_FAIL: 1}
_WORKER_RANK = {s.W_UP: 1, s.W_DOWN: 2, s.W_DISC: 3, s.W_CRASHED: 3}
