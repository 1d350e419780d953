"""A restart loses nothing a session shows, probed on a fresh executor: calls driven to every
record (succeeded, failed because the tool said so, did not run, may still be running, may have
run, rejected by a person and by the deadline, outcome_unknown), one left waiting for a person
and a user message, then a new executor rebuilt from the journal. Every recorded call must show
the same record, error, kept policy, deadline and attempts, the waiting call must still wait
under the same deadline, and the session history must hold the same messages in the same order
(TC-REC-1, TC-REC-2, TC-SNAP-1, D-8, D-30, D-32). The model's schedules restart the server only
while a call is in flight; this restarts it after every record kind.
"""

from __future__ import annotations

from dataclasses import replace

from atmostonce.check.probes.drive import Drive
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import (
    Answer,
    Ask,
    Command,
    Connected,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    GoAhead,
    OpenSession,
    SetPolicy,
    StartTimer,
    TimerKind,
    UserMessage,
)
from atmostonce.spec.session import AgentSnapshot, ToolCallStatus

SESSION = "restart-probe"
READ, IDEM, NONIDEM = (EffectClass.READ, EffectClass.IDEMPOTENT_WRITE,
                       EffectClass.NON_IDEMPOTENT_WRITE)
TOOLS = {"lookup": ToolPolicy(READ), "upsert": ToolPolicy(IDEM),
         "charge": ToolPolicy(NONIDEM, requires_approval=False),
         "refund": ToolPolicy(NONIDEM, requires_approval=True)}


def probe_restart(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    """One line for each thing the session shows otherwise after the restart; empty when the
    rebuilt executor shows all of it as before."""
    config = replace(config, max_attempts=1)
    try:
        drive, before, waiting = _before(factory, config)
        after = factory(config)
        at = drive.clock + 1.0
        commands = after.recover(list(drive.journal), at)
        problems = _differences(before, after.snapshot(SESSION))
        return problems or _approval_timer(commands, before, waiting, at)
    except SpecError as error:
        return [f"D-8: the restart probe could not drive the executor's calls to their "
                f"records: {error}"]
    except Exception as error:
        return [f"D-8: the executor failed on the restart probe: {type(error).__name__}: "
                f"{error}"]


def _before(factory: ExecutorFactory, config: ExecutorConfig
            ) -> tuple[Drive, AgentSnapshot, tuple[str, float]]:
    """The calls driven to every record, the snapshot then, and the key of the call left
    waiting for a person with the time it was asked."""
    drive = Drive(factory(config), SESSION)
    for tool, policy in TOOLS.items():
        drive.send(SetPolicy, tool, policy)
    drive.send(OpenSession, SESSION, None, True)
    calls = 0

    def ask(tool: str) -> str:
        nonlocal calls
        calls += 1
        drive.send(Ask, SESSION, f"t{calls}", f"c{calls}", tool, f'{{"n": {calls}}}')
        return f"{SESSION}/t{calls}/c{calls}"

    def hand(worker: str) -> GoAhead:
        drive.send(Connected, worker)
        go = drive.poll(worker)
        if go is None:
            raise SpecError(f"worker {worker} polled for a queued call and got no go-ahead")
        return go

    def answer(key: str, approve: bool) -> None:
        drive.requests += 1
        drive.send(Answer, f"probe-{drive.requests}", key, approve)

    ask("lookup")
    go = hand("w1")
    drive.send(Finished, "w1", go.attempt, True, "found it")
    ask("upsert")
    go = hand("w2")
    drive.send(Finished, "w2", go.attempt, False, "the service said no")
    unreached = ask("lookup")
    drive.fire(TimerKind.QUEUE_TIMEOUT, unreached)
    ask("charge")
    go = hand("w3")
    drive.fire(TimerKind.RUN_TIMEOUT, go.attempt)
    ask("lookup")
    hand("w4")
    drive.fire(TimerKind.HEARTBEAT_TIMEOUT, "w4")
    ask("upsert")
    hand("w5")
    drive.fire(TimerKind.HEARTBEAT_TIMEOUT, "w5")
    answer(ask("refund"), False)
    drive.fire(TimerKind.APPROVAL_DEADLINE, ask("refund"))
    waiting = (ask("refund"), drive.clock)
    drive.requests += 1
    drive.send(UserMessage, f"probe-{drive.requests}", SESSION, "Note from the order system")
    return drive, drive.executor.snapshot(SESSION), waiting


def _approval_timer(commands: list[Command], before: AgentSnapshot, waiting: tuple[str, float],
                    at: float) -> list[str]:
    """The call still waiting for a person gets its approval timer again from `recover`, due
    its kept deadline after the ask, not after the restart (D-7, D-32)."""
    key, asked = waiting
    view = next(v for v in before.tool_calls if f"{SESSION}/{v.turn_id}/{v.tool_call_id}" == key)
    if view.approval_deadline is None:
        return []
    due = asked + view.approval_deadline
    timers = [c for c in commands if isinstance(c, StartTimer)
              and c.kind is TimerKind.APPROVAL_DEADLINE and key in (c.key, c.subject)]
    if not timers:
        return [f"D-32: after a restart the call {key} waiting for a person got no approval "
                "timer from recover"]
    if abs(at + timers[-1].delay - due) > 1e-6:
        return [f"D-32: after a restart the approval timer of {key} is due at "
                f"{at + timers[-1].delay:g}, not {due:g} (asked at {asked:g} with a deadline "
                f"of {view.approval_deadline:g} s)"]
    return []


_VIEW_FIELDS = ("status", "error", "effect", "requires_approval", "approval_deadline",
                "attempts", "history", "idempotency_key", "tool")


def _differences(before: AgentSnapshot, after: AgentSnapshot) -> list[str]:
    problems: list[str] = []
    kept = {(v.turn_id, v.tool_call_id): v for v in after.tool_calls}
    shown = sorted({v.status.value for v in before.tool_calls})
    if len(shown) < 5:
        return [f"the restart probe drove the calls only to {', '.join(shown)}: the executor "
                "did not record what the probe asked of it"]
    for view in before.tool_calls:
        now = kept.get((view.turn_id, view.tool_call_id))
        name = f"the {view.status.value} call {view.tool_call_id} ({view.tool})"
        if view.status is ToolCallStatus.RUNNING:
            continue  # its attempt out at a worker is lost to the restart (D-8)
        if now is None:
            problems.append(f"D-8: after a restart {name} is gone from the snapshot")
        elif view.status is ToolCallStatus.AWAITING_APPROVAL:
            if (now.status, now.approval_deadline) != (view.status, view.approval_deadline):
                problems.append(f"D-8: after a restart {name} is {now.status.value} with the "
                                f"deadline {now.approval_deadline}, before it waited with "
                                f"{view.approval_deadline} (D-32)")
        elif now != view:
            field = next((f for f in _VIEW_FIELDS if getattr(now, f) != getattr(view, f)),
                         "view")
            was, became = (view, now) if field == "view" else (getattr(view, field),
                                                               getattr(now, field))
            problems.append(f"TC-REC-1: after a restart {name} shows another {field}: "
                            f"{became!r}, before {was!r}")
    if after.messages != before.messages:
        lost = [m for m in before.messages if m not in after.messages]
        problems.append(f"TC-REC-2: after a restart the session history holds "
                        f"{len(after.messages)} messages, before {len(before.messages)}; "
                        f"first missing or changed: {lost[0] if lost else 'the order'}")
    return problems
