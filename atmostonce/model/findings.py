"""What the model establishes about the page's one exception and its advice (TC-AMO-5,
decision D-6, finding F-6), about both choices of D-4 for a cancelled single attempt (the
default outcome_unknown; the failed record of finding F-7, with D-20), by exhaustive search.

F-6: passing each call's idempotency key does not make the documented double run harmless,
because the two runs belong to two calls and carry two keys; a business key shared by every
call of the tool does; the fence removes the overlap itself (not a repeat after the first run
ended, which the record's "may still be running" wording warns about); and with time-outs and
restarts off, no two runs of a single-attempt tool ever overlap.

D-4, the default (Dex's answer): a single-attempt call cancelled by its time-out after its
attempt reached a worker is recorded outcome_unknown, and the page's own reconcile steps report
it; no failed record ever says the tool may still be running.

F-7, under D-4's other choice (`cancel_records_failed`): such a call is recorded failed while
its tool goes on, and the write then lands at the service, after the record; the page's
reconcile steps never report such a call; the reconcile job with `reconcile_cancelled`
reports every one exactly once.

D-22, both choices: a write whose framework metadata wrongly claims read-only, in a session
whose default is non_idempotent_write, runs again after a time-out and applies twice from one
call when hints may lower the default, and never when the session keeps its default as a floor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from atmostonce.model import layout as s
from atmostonce.model.config import ModelConfig, parse_tools
from atmostonce.model.explorer import Explorer, Finding
from atmostonce.model.layout import State
from atmostonce.model.system import System
from atmostonce.model.trace import Trace, build
from atmostonce.spec.clauses import FindingId
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.step_kinds import StepKind

_WRITE = parse_tools("non_idempotent_write-approval")
_HINTED = ModelConfig(workers=2, calls=1, reasks=0, max_attempts=2, crashes=0, partitions=0,
                      restarts=0, timeouts=1, faults=1, policy_changes=0, reconcile_crashes=0,
                      tools=parse_tools("non_idempotent_write~read"),
                      session_default=EffectClass.NON_IDEMPOTENT_WRITE)
_BASE = ModelConfig(workers=2, calls=1, reasks=1, max_attempts=1, crashes=0, partitions=0,
                    restarts=0, timeouts=1, faults=1, policy_changes=0, reconcile_crashes=0,
                    tools=_WRITE)
_FAILS = _BASE.with_(cancel_records_failed=True)
"""D-4's other choice, which finding F-7 is about."""


@dataclass(frozen=True)
class Claim:
    """One claim of the finding: what was searched for, in which configuration, and whether
    the search found it (with the shortest trace) or proved it unreachable."""

    id: str
    statement: str
    config: ModelConfig
    expect_reachable: bool
    reachable: bool
    states: int
    trace: Trace | None

    @property
    def holds(self) -> bool:
        return self.reachable == self.expect_reachable


def _effects(state: State) -> int:
    return state[s.TE] & 3


def _overlap(system: System) -> Callable[[State], bool]:
    def goal(state: State) -> bool:
        running = sum(1 for c in system.calls_of(state) if system.runs(c[s.RUNS]))
        return running > 1
    return goal


def _twice_after_cancel(system: System) -> Callable[[State], bool]:
    def goal(state: State) -> bool:
        cancelled = any(s.last_end(c[s.G]) == s.E_CANCELLED for c in system.calls_of(state))
        return cancelled and _effects(state) == 2
    return goal


def _search(claim_id: str, statement: str, config: ModelConfig, expect: bool,
            goal: Callable[[System], Callable[[State], bool]]) -> Claim:
    system = System(config)
    explorer = Explorer(system, stop_at_first=False, goal=goal(system))
    result = explorer.run()
    if result.violations:
        raise RuntimeError(f"{claim_id}: the model breaks {result.violations[0].property} "
                           f"under {config.describe()}")
    found = explorer.goal_found
    trace = build(explorer, Finding(claim_id, statement, found), "witness") if found else None
    return Claim(claim_id, statement, config, expect, found is not None, result.states, trace)


def _cancelled_still_writing(system: System) -> Callable[[State], bool]:
    """A call recorded failed 'may still be running' whose run has not written yet."""
    def goal(state: State) -> bool:
        return any(c[s.CS] == s.C_FAILED and c[s.FK] == s.FK_MAY_STILL
                   and any(rs == s.R_STARTED for _, rs, _ in system.runs(c[s.RUNS]))
                   for c in system.calls_of(state))
    return goal


def _cancelled_reported(system: System) -> Callable[[State], bool]:
    def goal(state: State) -> bool:
        return any(c[s.CS] == s.C_FAILED and c[s.REP] for c in system.calls_of(state))
    return goal


def _cancelled_unknown_reported(system: System) -> Callable[[State], bool]:
    """A call whose attempt was cancelled, recorded outcome_unknown and reported."""
    def goal(state: State) -> bool:
        return any(c[s.CS] == s.C_UNKNOWN and s.last_end(c[s.G]) == s.E_CANCELLED and c[s.REP]
                   for c in system.calls_of(state))
    return goal


def _failed_may_still_run(system: System) -> Callable[[State], bool]:
    def goal(state: State) -> bool:
        return any(c[s.CS] == s.C_FAILED and c[s.FK] == s.FK_MAY_STILL
                   for c in system.calls_of(state))
    return goal


def _reported_twice(system: System) -> Callable[[State], bool]:
    def goal(state: State) -> bool:
        return any(c[s.REP] > 1 for c in system.calls_of(state))
    return goal


def _write_after_failed_record(claim_id: str, statement: str, config: ModelConfig) -> Claim:
    """The shortest path to a failed record whose run has yet to write, and the write."""
    system = System(config)
    explorer = Explorer(system, stop_at_first=False, goal=_cancelled_still_writing(system))
    result = explorer.run()
    found = explorer.goal_found
    trace = None
    if found is not None:
        source = explorer.states[found]
        write = next((succ for succ in system.successors(source) if succ.label[0] == StepKind.APPLY
                      and _effects(succ.state) > _effects(source)), None)
        if write is not None:
            trace = build(explorer, Finding(claim_id, statement, -1, found, write.label,
                                            write.state), "witness")
    return Claim(claim_id, statement, config, True, trace is not None, result.states, trace)


def establish() -> list[Claim]:
    """Run every search of findings F-6 and F-7 and of decisions D-4's and D-22's two
    choices; each takes well under a second."""
    return [
        _search(FindingId.F_6 + "a", "with a service that drops repeated idempotency keys, a "
                "cancelled run and the model's second call of the tool both take effect",
                _BASE.with_(ledger="key"), True, lambda _: lambda st: _effects(st) == 2),
        _search(FindingId.F_6 + "b", "with a service that drops a repeated business key shared "
                "by the calls, the effect is applied once whatever the runs do",
                _BASE.with_(ledger="business"), False, lambda _: lambda st: _effects(st) == 2),
        _search(FindingId.F_6 + "c", "with the fence on, no run of the new call overlaps the "
                "cancelled run", _BASE.with_(ledger="key", fence=True), False, _overlap),
        _search(FindingId.F_6 + "d", "with the fence on, both calls can still take effect: the "
                "new call waits until the cancelled run ends, and that run may have written "
                "first", _BASE.with_(ledger="key", fence=True), True, _twice_after_cancel),
        _search(FindingId.F_6 + "e", "with time-outs and restarts off (crashes and partitions "
                "on), no two runs of a single-attempt tool ever overlap",
                _BASE.with_(timeouts=0, crashes=1, partitions=1, faults=2), False, _overlap),
        _search("D-4a", "by default (Dex's answer), a single-attempt call whose attempt timed "
                "out after it reached a worker is recorded outcome_unknown, and the page's own "
                "reconcile steps report it", _BASE, True, _cancelled_unknown_reported),
        _search("D-4b", "by default, no call is ever recorded failed saying the tool may still "
                "be running", _BASE, False, _failed_may_still_run),
        _write_after_failed_record(
            FindingId.F_7 + "a", "under D-4's other choice, a single-attempt call is recorded "
            "failed (its attempt timed out, the tool may still be running), and then its "
            "tool's write lands at the service", _FAILS),
        _search(FindingId.F_7 + "b", "under D-4's other choice, with the page's reconcile "
                "steps, which look only for outcome_unknown, no such failed call is ever "
                "reported", _FAILS, False, _cancelled_reported),
        _search(FindingId.F_7 + "c", "under D-4's other choice, with the reconcile job also "
                "looking at failed calls whose tool may still be running, no call is reported "
                "twice, and at every end state each such call is reported once",
                _FAILS.with_(reconcile_cancelled=True), False, _reported_twice),
        _search("D-22a", "when hints may lower the session default (the default), a write "
                "hinted read-only under a non_idempotent_write default runs in CallTool and "
                "one call applies it twice", _HINTED, True,
                lambda _: lambda st: _effects(st) == 2),
        _search("D-22b", "when the session keeps its default as a floor, that write runs once "
                "and one call never applies it twice", _HINTED.with_(hints_may_lower=False),
                False, lambda _: lambda st: _effects(st) == 2),
    ]
