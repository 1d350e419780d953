"""The Tool Calls page on Restate, as pure rules: how many attempts a call's `ctx.run` gets from
its effective policy, and which record a call ends with from what `ctx.run` gave back. No
Restate import, so the services and the tests read the same rules.

| Step                      | Restate                                                          |
| ------------------------- | ---------------------------------------------------------------- |
| `CallTool`                | `ctx.run_typed(..., RunOptions(max_attempts=max_attempts))`       |
| `CallSingleAttemptTool`   | `RunOptions(max_attempts=1)`: Restate's strongest at-most-once    |

A failure the tool reports is a value the closure returns, never an exception, so Restate never
retries it (D-3). When the attempts run out (the closure raised each time, e.g. the effect
ledger refused its start), `ctx.run` raises `TerminalError`: the attempt reached the worker and
ended without a result, which the spec calls WORKER_LOST (D-5: unknown means reached).
"""

from __future__ import annotations

from dataclasses import dataclass

from atmostonce.spec.policy import DurableStep, EffectivePolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import (
    AttemptEnd,
    Outcome,
    Record,
    decide,
    record_of,
    unknown_detail,
)


@dataclass(frozen=True)
class RunPlan:
    """The options of a call's `ctx.run`."""

    max_attempts: int
    retry_interval: float


def plan(policy: EffectivePolicy, config: ExecutorConfig) -> RunPlan:
    """The `ctx.run` options for a call whose effective policy at ask time is `policy`."""
    retries = policy.step is DurableStep.CALL_TOOL
    return RunPlan(config.max_attempts if retries else 1, config.retry_backoff)


def outcome(policy: EffectivePolicy, run: RunPlan, returned: bool | None, output: str,
            cancel_records_failed: bool = False) -> Outcome:
    """The call's record: `returned` True when the tool returned, False when it reported a
    failure, None when `ctx.run` gave up after its attempts (TerminalError)."""
    if returned:
        return Outcome(Record.SUCCEEDED, "")
    end = AttemptEnd.TOOL_FAILED if returned is False else AttemptEnd.WORKER_LOST
    decision = decide(policy.effect, end, run.max_attempts, run.max_attempts,
                      run.max_attempts > 1, cancel_records_failed)
    if end is AttemptEnd.TOOL_FAILED:
        detail = output
    elif decision.record is Record.OUTCOME_UNKNOWN:
        detail = unknown_detail(end)
    else:
        detail = ""
    return record_of(decision, detail)
