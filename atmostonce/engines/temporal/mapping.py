"""The Tool Calls page on Temporal, as pure rules: which activity options a call gets from its
effective policy, and which record a call ends with from what Temporal reports about its
activity. Both the session workflow (to decide) and the server log (to say what the engine
saw) use these rules, so the two never disagree. No Temporal import: the rules read plain
values, which `workflows` and `history` take out of Temporal's exceptions and events.

An activity per call, its options from the spec's policy resolution (TC-POL-2):

| Step                      | Temporal                                                    |
| ------------------------- | ----------------------------------------------------------- |
| `CallTool`                | RetryPolicy(maximum_attempts=max_attempts, constant backoff) |
| `CallSingleAttemptTool`   | RetryPolicy(maximum_attempts=1): Temporal's at-most-once    |

and, for both, schedule-to-start = the queue timeout (an attempt no worker took), start-to-close
= the run timeout, heartbeat timeout = the heartbeat timeout. A failure the tool reports is a
non-retryable application error (D-3), so Temporal never retries it.

How an activity's end maps onto the spec's attempt ends (`AttemptEnd`):

- completed: RETURNED; a `ToolReportedFailure` application error: TOOL_FAILED;
- a schedule-to-start timeout: NOT_REACHED. Temporal never retries one, and it records no
  STARTED event for the attempt that timed out, so the tool did not run in that attempt. An
  earlier attempt did reach a worker exactly when the timeout carries a cause: Temporal puts
  the previous attempt's failure there, and only attempts that started fail in a retryable way;
- a start-to-close timeout: CANCELLED (the engine gave up on an attempt that may still run,
  TC-AMO-3). For a single-attempt call that is outcome_unknown (D-4, as Dex records it: the
  attempt reached a worker and ended without a result); failed, "may still be running", only
  when the harness declares D-4's other choice (`ExecutorConfig.cancel_records_failed`, F-7);
- a heartbeat timeout: WORKER_LOST (the worker stopped or lost its connection, TC-REC-LOST);
- anything else after the activity started (a worker error, a retryable failure that ran out
  of attempts): WORKER_LOST, since the tool may have run (D-5: unknown means reached).

The record then follows `atmostonce.spec.records.decide`, with the attempts Temporal made: it
stopped retrying, so the call is out of attempts.
"""

from __future__ import annotations

import enum
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

__all__ = ["ACTIVITY", "NAMESPACE", "PAGE", "REGISTRY_ID", "SESSIONS_QUEUE", "TOOLS_QUEUE",
           "TOOL_FAILED_TYPE", "ActivityPlan", "AttemptEnd", "EffectivePolicy", "Ending",
           "Outcome", "TimeoutKind", "Variant", "attempt_end", "outcome", "plan",
           "reached_before", "succeeded"]

TOOL_FAILED_TYPE = "ToolReportedFailure"
"""The application error type of a failure the tool reported: never retried (D-3)."""
ACTIVITY = "call_tool"
"""The activity type every tool call runs as."""
SESSIONS_QUEUE = "atmostonce-sessions"
"""The task queue of the session workflows."""
TOOLS_QUEUE = "atmostonce-tools"
"""The task queue of the tool activities, polled by the tool worker processes."""
REGISTRY_ID = "atmostonce-tool-policies"
"""The workflow id of the tool policy registry."""
NAMESPACE = "default"


class TimeoutKind(enum.Enum):
    """Temporal's activity timeout types that a tool call can meet."""

    SCHEDULE_TO_START = "schedule_to_start"
    START_TO_CLOSE = "start_to_close"
    HEARTBEAT = "heartbeat"
    SCHEDULE_TO_CLOSE = "schedule_to_close"


@dataclass(frozen=True)
class Variant:
    """How the mapping is built; the default is the page's mapping, the others are deliberately
    broken ones that chaos must catch."""

    name: str = "page"
    retry_every_class: bool = False
    """Broken: give every call the CallTool retry policy, so a non-idempotent write that lost
    its worker runs again (breaks TC-EFF-NONIDEM, A-ONE-ATTEMPT)."""
    lease: bool = True
    """Whether a tool worker stops its run once its heartbeats have not reached the server for
    the lease (D-12). Without it a cut-off worker runs on after its call is recorded
    outcome_unknown."""


PAGE = Variant()


@dataclass(frozen=True)
class ActivityPlan:
    """The options of a call's activity (see the module docstring)."""

    step: DurableStep
    maximum_attempts: int
    retry_interval: float
    schedule_to_start: float
    start_to_close: float
    heartbeat: float


def plan(policy: EffectivePolicy, config: ExecutorConfig, variant: Variant = PAGE
         ) -> ActivityPlan:
    """The activity options for a call whose effective policy at ask time is `policy`."""
    retries = policy.step is DurableStep.CALL_TOOL or variant.retry_every_class
    return ActivityPlan(policy.step, config.max_attempts if retries else 1,
                        config.retry_backoff, config.queue_timeout, config.run_timeout,
                        config.heartbeat_timeout)


@dataclass(frozen=True)
class Ending:
    """What Temporal reported about a call's activity when it closed."""

    completed: bool = False
    tool_failed: bool = False
    timeout: TimeoutKind | None = None
    earlier_failure: bool = False
    """The failure carries the failure of a previous attempt (Temporal's `cause`)."""
    started: bool = True
    """The closing attempt has a STARTED event."""


def attempt_end(ending: Ending) -> AttemptEnd:
    """The spec's end of the attempt Temporal closed the activity with."""
    if ending.completed:
        return AttemptEnd.RETURNED
    if ending.tool_failed:
        return AttemptEnd.TOOL_FAILED
    if ending.timeout is TimeoutKind.SCHEDULE_TO_START or not ending.started:
        return AttemptEnd.NOT_REACHED
    if ending.timeout is TimeoutKind.START_TO_CLOSE:
        return AttemptEnd.CANCELLED
    return AttemptEnd.WORKER_LOST


def reached_before(ending: Ending) -> bool:
    """Whether an attempt before the closing one reached a worker."""
    return ending.earlier_failure


def outcome(policy: EffectivePolicy, activity: ActivityPlan, ending: Ending,
            output: str = "", cancel_records_failed: bool = False) -> Outcome:
    """The call's record and error text: the spec's decision for the closing attempt, with
    the attempts Temporal made all spent (it retries no more), under the declared choice of
    D-4; an outcome_unknown error names how the attempt ended and its progress."""
    end = attempt_end(ending)
    attempts = activity.maximum_attempts
    decision = decide(policy.effect, end, attempts, attempts, reached_before(ending),
                      cancel_records_failed)
    if end is AttemptEnd.TOOL_FAILED:
        detail = output
    elif decision.record is Record.OUTCOME_UNKNOWN:
        detail = unknown_detail(end)
    else:
        detail = ""
    return record_of(decision, detail)


def succeeded() -> Outcome:
    return Outcome(Record.SUCCEEDED, "")
