"""What the model establishes about the page's one exception and its advice (TC-AMO-5,
decision D-6, finding F-6), by exhaustive search.

F-6: passing each call's idempotency key does not make the documented double run harmless,
because the two runs belong to two calls and carry two keys; a business key shared by every
call of the tool does; the fence removes the overlap itself (not a repeat after the first run
ended, which the record's "may still be running" wording warns about); and with time-outs and
restarts off, no two runs of a single-attempt tool ever overlap.
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

_WRITE = parse_tools("non_idempotent_write-approval")
_BASE = ModelConfig(workers=2, calls=1, reasks=1, max_attempts=1, crashes=0, partitions=0,
                    restarts=0, timeouts=1, faults=1, policy_changes=0, reconcile_crashes=0,
                    tools=_WRITE)


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


def establish() -> list[Claim]:
    """Run every search of finding F-6; each takes well under a second."""
    return [
        _search("F-6a", "with a service that drops repeated idempotency keys, a cancelled run "
                "and the model's second call of the tool both take effect",
                _BASE.with_(ledger="key"), True, lambda _: lambda st: _effects(st) == 2),
        _search("F-6b", "with a service that drops a repeated business key shared by the calls, "
                "the effect is applied once whatever the runs do",
                _BASE.with_(ledger="business"), False, lambda _: lambda st: _effects(st) == 2),
        _search("F-6c", "with the fence on, no run of the new call overlaps the cancelled run",
                _BASE.with_(ledger="key", fence=True), False, _overlap),
        _search("F-6d", "with the fence on, both calls can still take effect: the new call "
                "waits until the cancelled run ends, and that run may have written first",
                _BASE.with_(ledger="key", fence=True), True, _twice_after_cancel),
        _search("F-6e", "with time-outs and restarts off (crashes and partitions on), no two "
                "runs of a single-attempt tool ever overlap",
                _BASE.with_(timeouts=0, crashes=1, partitions=1, faults=2), False, _overlap),
    ]
