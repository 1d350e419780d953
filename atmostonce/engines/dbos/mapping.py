"""The Tool Calls page on DBOS, as pure rules: the variants and the record each outcome of a
call gives. No DBOS import: the workflow (`app`) writes these records into its events and the
session API (`client`) reads them back, so the two never disagree.

| page                    | DBOS                                                             |
| ----------------------- | ---------------------------------------------------------------- |
| session (Flow)          | one workflow per session, workflow id = session id, enqueued on   |
|                         | the `sessions` queue: a second start with the id runs nothing     |
| the model's tool calls  | a step (`model_turn`) that reads the next turn from the script    |
| tool call               | a `@DBOS.step` (`steps`) or plain workflow code (`tool_in_workflow`) |
|                         | with key `{session}/{turn}/{call}` reaching the effect ledger     |
| `CallTool`              | the step's own retries: `retries_allowed=True`, `max_attempts` the |
|                         | call kept, for a failure outside the tool only                    |
| `CallSingleAttemptTool` | a step with DBOS's default `retries_allowed=False`: DBOS's        |
|                         | strongest option, and still at-least-once across a crash (DBOS's  |
|                         | docs: steps get at-least-once guarantees): a step that was running |
|                         | when its process died runs again when the workflow is recovered   |
| record                  | the workflow's event `records` (`DBOS.set_event`), one entry a call |
| approval                | `DBOS.recv(topic=key, timeout_seconds=...)` with the call's deadline, |
|                         | answered by `DBOS.send` after the app's inbox took the answer     |
| worker                  | an application process that launched DBOS with its executor id    |
| server                  | none: the SQLite system database is a file every process opens    |
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from atmostonce.spec.records import (
    OUTCOME_UNKNOWN_ERROR,
    FailureKind,
    Outcome,
    Record,
    RejectReason,
    failure_text,
    reject_text,
)
from atmostonce.spec.session import ToolCallStatus, tool_result_text


class ToolRun(enum.Enum):
    """Where the workflow runs a call's tool."""

    STEP = "step"
    """In a `@DBOS.step`: its output is checkpointed, a finished step never runs again."""
    GUARDED = "guarded"
    """In a `@DBOS.step` that runs it through `atmostonce.guard`: the attempt's intent is in
    the guard's journal before the tool starts, so a step DBOS runs again after a crash gives
    back the call's result or records outcome_unknown, never runs a single-attempt tool twice,
    and a call's attempts are counted across processes."""
    WORKFLOW = "workflow"
    """As plain workflow code, as Pydantic AI's DBOS integration runs custom tool functions:
    nothing is checkpointed, so every recovery of the workflow runs it again."""


WORKER = "atmostonce.engines.dbos.worker"
"""The module an application process of the plain DBOS variants runs."""


@dataclass(frozen=True)
class Variant:
    """One way a team builds the page on DBOS."""

    name: str
    tool_run: ToolRun
    worker: str = WORKER
    """The module its application processes run (`python -m`)."""
    built_with: str = "DBOS's workflows and steps"
    """What the team built the session workflow with, for the run's description."""


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("steps", ToolRun.STEP),
    Variant("tool_in_workflow", ToolRun.WORKFLOW),
    Variant("guarded", ToolRun.GUARDED, built_with="DBOS's workflows and steps, and the guard"),
)}
"""Each variant by the name its factory has in `atmostonce.engines.dbos`."""


@dataclass(frozen=True)
class CallRecord:
    """A call's record as the workflow keeps it in its `records` event: the record, its error,
    the tool result the model reads, and the attempt that decided it (none for a rejection)."""

    record: Record
    error: str
    text: str
    attempt: str = ""

    @property
    def status(self) -> ToolCallStatus:
        return ToolCallStatus.of_record(self.record)

    def as_json(self) -> dict[str, str]:
        return {"record": self.record.value, "error": self.error, "text": self.text,
                "attempt": self.attempt}

    @classmethod
    def of_json(cls, value: Any) -> CallRecord:
        return cls(Record(value["record"]), str(value["error"]), str(value["text"]),
                   str(value.get("attempt", "")))


def _of(outcome: Outcome, attempt: str = "", result: str = "") -> CallRecord:
    return CallRecord(outcome.record, outcome.error, tool_result_text(outcome, result), attempt)


def decided(outcome: Outcome, attempt: str, result: str = "") -> CallRecord:
    """The record of an outcome decided elsewhere (the guard's)."""
    return _of(outcome, attempt, result)


def returned(output: str, attempt: str) -> CallRecord:
    """The tool returned `output` (TC-REC-SUCC)."""
    return _of(Outcome(Record.SUCCEEDED, ""), attempt, output)


def tool_failed(output: str, attempt: str) -> CallRecord:
    """The tool reported a failure (D-3): failed, never retried."""
    return _of(Outcome(Record.FAILED, failure_text(FailureKind.TOOL_ERROR, output)), attempt)


def rejected(reason: RejectReason) -> CallRecord:
    """A person rejected the call, or its deadline passed (TC-REC-REJ)."""
    return _of(Outcome(Record.REJECTED, reject_text(reason)))


def unknown(attempt: str) -> CallRecord:
    """The attempt reached the tool and ended without a result: it may have taken effect."""
    return _of(Outcome(Record.OUTCOME_UNKNOWN, OUTCOME_UNKNOWN_ERROR), attempt)


def exhausted(read: bool, attempt: str) -> CallRecord:
    """A call with retries that ran out of attempts after they reached the tool: failed for a
    read, outcome_unknown for an idempotent write (TC-REC-EXHAUST-READ, TC-REC-EXHAUST-OTHER)."""
    if read:
        return _of(Outcome(Record.FAILED, failure_text(FailureKind.MAY_HAVE_RUN)), attempt)
    return unknown(attempt)
