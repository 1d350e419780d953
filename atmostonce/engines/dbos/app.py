"""The application an agent team builds on DBOS, run in every application process: one
workflow per session, which asks the scripted model for each turn's calls (a step), waits for
each approval with `DBOS.recv` until the call's deadline, runs each tool, and keeps every
call's record in its event `records`.

The workflow (`session`) repeats: the model's next turn (`model_turn`, a step: the calls of
the earliest turn not handled yet, once its last call is `QUIET` seconds old); with none,
`DBOS.recv(ASK)` waits for the session API's next ask. A turn's calls run one after another,
those without approval first. A call that waits for approval loops on a step that reads the
app's inbox (`decision`: the inbox decides, and rejects a call found past its deadline) and
`DBOS.recv(topic=key)` until the deadline, which DBOS keeps across a crash.

How the tool runs is the variant's (`mapping.ToolRun`):

- `STEP`: a `@DBOS.step`. A single-attempt call's step has DBOS's default
  `retries_allowed=False`, the strongest at-most-once option DBOS offers; DBOS still runs a
  step again when the process that ran it died before its output was checkpointed (steps are
  at-least-once by DBOS's docs). A call with retries has `retries_allowed=True` with the
  call's `max_attempts` and backoff, retrying only a failure outside the tool
  (`ToolInfrastructureError`);
- `WORKFLOW`: plain workflow code, as Pydantic AI's DBOS integration runs custom tool
  functions: nothing is checkpointed, so each recovery of the workflow runs every call it
  already ran again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dbos import DBOS, WorkflowSerializationFormat
from dbos._error import DBOSMaxStepRetriesExceeded

from atmostonce.engines.appstore import AppStore, CallRow
from atmostonce.engines.dbos import mapping
from atmostonce.engines.dbos.mapping import CallRecord, ToolRun, Variant
from atmostonce.engines.guards import worker_of
from atmostonce.engines.ledger_run import LedgerRun
from atmostonce.engines.notes import Notes
from atmostonce.guard import Attempt, Guard, Statement, Waiting
from atmostonce.guard import ToolFailed as GuardToolFailed
from atmostonce.runtime.ledger_client import AsyncLedger
from atmostonce.runtime.tools import Behaviour, Fenced, run_tool
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import RejectReason

QUEUE = "sessions"
"""The DBOS queue the session API enqueues each session's workflow on."""
WORKFLOW = "session"
RECORDS = "records"
"""The workflow's event holding every call's record, by tool call id."""
PORTABLE = WorkflowSerializationFormat.PORTABLE
"""The records event is kept as plain JSON, so its history (`workflow_events_history`) reads
without DBOS."""
ASK = "ask"
"""The topic of the session API's message for each ask."""
QUIET = 0.15
"""Seconds after a turn's last call was asked before the model answers with the turn."""
IDLE = 60.0
"""Seconds a session's workflow waits for an ask before it looks at the script again."""
_REASON = {ApprovalState.REJECTED: RejectReason.PERSON,
           ApprovalState.EXPIRED: RejectReason.DEADLINE}

T = TypeVar("T")


class ToolInfrastructureError(Exception):
    """A run of a call with retries failed outside the tool, after it began: the tool may have
    run. The step's retries take it; once they run out, the call's effect decides the record
    (`mapping.exhausted`)."""


def retryable(error: BaseException) -> bool:
    """What a call's step retries: a failure outside the tool (`should_retry`)."""
    return isinstance(error, ToolInfrastructureError)


@dataclass
class RunContext:
    """What an application process gives its workflow: the store, the effect ledger on the
    process's own event loop (`loop`), its notes and the tools' behaviours."""

    worker: str
    store: AppStore
    ledger: AsyncLedger
    loop: asyncio.AbstractEventLoop
    notes: Notes
    table: Mapping[str, Behaviour]
    guard: Guard | None = None
    """The guard over the journal the processes share (`GUARDED`)."""
    runs: Counter[str] = field(default_factory=Counter)

    def on_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the ledger's event loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def run_once(self, call: CallRow, attempt: str, note_start: bool = True
                       ) -> tuple[bool, str]:
        """One run of `call`'s tool as `attempt`, on the ledger's event loop: note the hand-out,
        tell the ledger the run starts, run the tool with the call's key, tell the ledger how
        it ended and wait for its answer, so the ledger knows before the record is kept.
        Whether the tool returned, and its output; a failure outside the tool is raised.
        Without `note_start` the hand-out is noted elsewhere (the guard's journal)."""
        if note_start:
            self.notes.note("started", attempt=attempt, key=call.key, tool=call.tool)
        run = LedgerRun(self.ledger, self.worker, attempt, call.key, call.tool)
        try:
            await run.start()
            ok, output = await run_tool(call.tool, call.arguments, run, self.table)
        except (SpecError, OSError, Fenced):
            self.notes.note("ended", attempt=attempt, ok=None)
            raise
        self.notes.note("ended", attempt=attempt, ok=ok)
        with contextlib.suppress(SpecError, OSError):  # the run is over either way
            await self.ledger.request({
                "op": "run_ended", "worker": self.worker, "attempt": attempt,
                "end": "returned" if ok else "tool_failed", "output": output})
        return ok, output

    def attempt(self, call: CallRow) -> CallRecord:
        """One attempt of `call` at this process (`run_once`). A failure outside the tool
        after the run began is raised for a call with retries and is outcome_unknown for a
        single-attempt call."""
        self.runs[call.key] += 1
        attempt = f"{call.key}#{self.worker}.{self.runs[call.key]}"
        try:
            ok, output = self.on_loop(self.run_once(call, attempt))
        except (SpecError, OSError, Fenced) as error:
            if call.retries_allowed:
                raise ToolInfrastructureError(f"{call.tool}: {error}") from None
            return mapping.unknown(attempt)
        return mapping.returned(output, attempt) if ok else mapping.tool_failed(output, attempt)

    def guarded(self, guard: Guard, call: CallRow) -> CallRecord:
        """The call's tool run through the guard (`GUARDED`): its policy kept in the guard's
        journal, each attempt's intent on disk before the tool starts, so a run again of the
        step gives back the call's result, or outcome_unknown for a single-attempt call whose
        attempt began and never ended, and attempts are counted across processes. The
        approval is the app's inbox's, decided before the step."""
        guard.ask(call.key, call.tool, call.arguments,
                  Statement(ToolPolicy(call.effect, requires_approval=False)))

        async def tool(step: Attempt) -> str:
            ok, output = await self.run_once(call, step.label, note_start=False)
            if not ok:
                raise GuardToolFailed(output)
            return output

        finished = self.on_loop(guard.run(call.key, tool,
                                          lambda key, n: f"{key}#{self.worker}.{n}"))
        if isinstance(finished, Waiting):
            raise SpecError(f"the guard holds {call.key} for an approval the app decided")
        return mapping.decided(finished.outcome, finished.attempt or "", finished.output)


def turn_due(ctx: RunContext, session_id: str, handled: list[str]) -> tuple[list[CallRow], float]:
    """The calls of the earliest turn not handled yet and the seconds until its last call is
    QUIET seconds old (none when every asked call is handled)."""
    pending = [c for c in ctx.store.calls(session_id) if c.call_id not in handled]
    if not pending:
        return [], 0.0
    turn = [c for c in pending if c.turn == pending[0].turn]
    return turn, max(c.asked for c in turn) + QUIET - time.monotonic()


def decided(ctx: RunContext, key: str, session_id: str) -> tuple[str, float]:
    """The inbox's state of the call's approval, the deadline judged by the clock, and the
    seconds left to it."""
    row = ctx.store.approvals(session_id)[key]
    left = row.deadline - time.monotonic()
    if row.state is ApprovalState.WAITING and left <= 0:
        ctx.store.expire([key])
        row = ctx.store.approvals(session_id)[key]
    return row.state.value, left


def rejection(state: str) -> CallRecord | None:
    """The record of a call whose approval is in `state`: None while it waits or once it is
    approved."""
    found = ApprovalState(state)
    return mapping.rejected(_REASON[found]) if found in _REASON else None


def tool_runner(ctx: RunContext, variant: Variant, config: ExecutorConfig
                ) -> Callable[[CallRow], CallRecord]:
    """Register the variant's tool steps with DBOS (before `DBOS.launch`) and give what runs a
    call's tool the variant's way (`ToolRun`) and turns its end into the call's record."""

    @DBOS.step(name="tool_once")
    def tool_once(call: CallRow) -> dict[str, str]:
        return ctx.attempt(call).as_json()

    @DBOS.step(name="tool_retried", retries_allowed=True, max_attempts=config.max_attempts,
               interval_seconds=config.retry_backoff, backoff_rate=1.0,
               should_retry=retryable)
    def tool_retried(call: CallRow) -> dict[str, str]:
        return ctx.attempt(call).as_json()

    def in_workflow(call: CallRow) -> CallRecord:
        """The tool as plain workflow code, retried by a plain loop for a call with
        retries."""
        attempts = config.max_attempts if call.retries_allowed else 1
        for n in range(1, attempts + 1):
            try:
                return ctx.attempt(call)
            except ToolInfrastructureError:
                if n == attempts:
                    raise
                time.sleep(config.retry_backoff)
        raise AssertionError("unreachable")

    @DBOS.step(name="tool_guarded")
    def tool_guarded(call: CallRow) -> dict[str, str]:
        if ctx.guard is None:
            raise SpecError("the guarded variant's process was started without the guard")
        return ctx.guarded(ctx.guard, call).as_json()

    def run(call: CallRow) -> CallRecord:
        try:
            if variant.tool_run is ToolRun.WORKFLOW:
                return in_workflow(call)
            if variant.tool_run is ToolRun.GUARDED:
                return CallRecord.of_json(tool_guarded(call))
            step = tool_retried if call.retries_allowed else tool_once
            return CallRecord.of_json(step(call))
        except (DBOSMaxStepRetriesExceeded, ToolInfrastructureError):
            return mapping.exhausted(call.effect is EffectClass.READ, "")

    return run


def note_delivering(ctx: RunContext, key: str, record: CallRecord) -> None:
    """Note that the record of an attempt is about to reach the workflow's durable state."""
    if record.attempt:
        ctx.notes.note("delivering", attempt=record.attempt, key=key,
                       of=worker_of(record.attempt), ok=record.record.value == "succeeded")


def register(ctx: RunContext, variant: Variant, config: ExecutorConfig) -> None:
    """Register the session workflow and its steps with DBOS (before `DBOS.launch`)."""
    run = tool_runner(ctx, variant, config)

    @DBOS.step(name="model_turn")
    def model_turn(session_id: str, handled: list[str]) -> list[CallRow]:
        """The calls of the earliest turn not handled yet, once due (`turn_due`)."""
        while True:
            turn, wait = turn_due(ctx, session_id, handled)
            if wait <= 0:
                return turn
            time.sleep(wait)

    @DBOS.step(name="decision")
    def decision(key: str, session_id: str) -> tuple[str, float]:
        return decided(ctx, key, session_id)

    def approved(call: CallRow) -> CallRecord | None:
        """None once the call is approved; its rejection otherwise."""
        while True:
            state, left = decision(call.key, call.thread)
            if state == ApprovalState.APPROVED.value:
                return None
            refused = rejection(state)
            if refused is not None:
                return refused
            DBOS.recv(call.key, timeout_seconds=max(0.01, left))

    @DBOS.workflow(name=WORKFLOW)
    def session(session_id: str) -> None:
        records: dict[str, dict[str, str]] = {}
        handled: list[str] = []
        while True:
            turn = model_turn(session_id, handled)
            if not turn:
                DBOS.recv(ASK, timeout_seconds=IDLE)
                continue
            handled += [c.call_id for c in turn]
            for call in sorted(turn, key=lambda c: c.requires_approval):
                record = approved(call) if call.requires_approval else None
                if record is None:
                    record = run(call)
                    note_delivering(ctx, call.key, record)
                records[call.call_id] = record.as_json()
                DBOS.set_event(RECORDS, records, serialization_type=PORTABLE)


def records_of(value: Any) -> dict[str, CallRecord]:
    """The records a session's `records` event holds (none before its first)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): CallRecord.of_json(v) for k, v in value.items()}
