"""A server can die after any `Persist` of a batch (D-8): probed on fresh executors by cutting the
journal of one run right after each of its entries, recovering a fresh executor from every
prefix and driving it to quiescence (workers come back with nothing running and finish what
they get as before, timers fire as they come, people answer as before). Every call must end
with a record; one recorded before the cut keeps that record; one whose ending batch was cut
part-way, its end durable but not its record, gets the record the uncut run gave it (TC-REC-1,
D-3); one asked with no attempt yet gets its first at once; the approval timer of a waiting
call is due its kept deadline after the ask, at once when that has passed (D-32); a session
that keeps its default as a floor still does after a restart (D-22); and with the fence on, a
worker that held a single-attempt run when the server stopped and never comes back is declared
lost, so that tool runs again (D-6, D-8, D-12). The restart probe restarts only between
batches; this restarts inside each one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from atmostonce.check.probes.timed_drive import IN_PROGRESS, TimedDrive
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolHints, ToolPolicy
from atmostonce.spec.protocol import (
    Answer,
    Ask,
    Command,
    Connected,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    OpenSession,
    SetPolicy,
    StartTimer,
    TimerKind,
)
from atmostonce.spec.session import ToolCallStatus

SESSION, FLOORED = "crash-probe", "crash-probe-floored"
WORKERS = ("w1", "w2", "w3")
READ, IDEM, NONIDEM = (EffectClass.READ, EffectClass.IDEMPOTENT_WRITE,
                       EffectClass.NON_IDEMPOTENT_WRITE)
HINTED, HINTS = "hinted_lookup", ToolHints(read_only=True)
TOOLS = {"lookup": ToolPolicy(READ), "upsert": ToolPolicy(IDEM),
         "charge": ToolPolicy(NONIDEM, requires_approval=False),
         "refund": ToolPolicy(NONIDEM, requires_approval=True)}
SETTLE_ROUNDS = 200


@dataclass
class Uncut:
    """The uncut run: its drive, what each call's attempts return (by their arguments), how
    people answered, when each call was asked and with which arguments."""

    drive: TimedDrive
    results: dict[str, tuple[bool, str]]
    answers: dict[str, bool]
    asked: dict[str, float]
    arguments: dict[str, str]


def probe_crashes(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    """One line for each thing a restart inside a batch loses or changes; empty when the
    executor recovers every cut of the journal as D-8 says."""
    config = replace(config, max_attempts=2, fence=False)
    try:
        uncut = _uncut(factory, config)
        problems = _tool_errors(uncut)
        for cut in range(1, len(uncut.drive.journal) + 1):
            problems += _after_cut(factory, config, uncut, cut)
            if problems:
                return problems
        return _floor(factory, config, uncut) or _fence(factory, config)
    except SpecError as error:
        return [f"D-8: the crash probe could not drive the executor: {error}"]
    except Exception as error:
        return [f"D-8: the executor failed on the crash probe: {type(error).__name__}: {error}"]


def _uncut(factory: ExecutorFactory, config: ExecutorConfig) -> Uncut:
    """Calls ended every way a batch ends one: returned, failed as the tool said (twice),
    approved and run, rejected by a person and by the deadline, lost with its worker, timed out
    and retried after a backoff, and a hinted call in a floored session (D-22)."""
    drive = TimedDrive(factory(config), (SESSION, FLOORED))
    uncut = Uncut(drive, {}, {}, {}, {})
    for tool, policy in TOOLS.items():
        drive.send(SetPolicy, tool, policy)
    drive.send(SetPolicy, HINTED, None, HINTS)
    drive.send(OpenSession, SESSION, None, True)
    drive.send(OpenSession, FLOORED, NONIDEM, False)
    for worker in WORKERS:
        drive.send(Connected, worker)
    calls = 0

    def ask(tool: str, ok: bool = True, output: str = "", session: str = SESSION) -> str:
        nonlocal calls
        calls += 1
        arguments = f'{{"n": {calls}}}'
        uncut.results[arguments] = (ok, output)
        drive.send(Ask, session, f"t{calls}", f"c{calls}", tool, arguments)
        key = f"{session}/t{calls}/c{calls}"
        uncut.asked[key], uncut.arguments[key] = drive.clock, arguments
        return key

    def run(worker: str, finish: bool = True) -> str:
        go = drive.poll(worker)
        if go is None:
            raise SpecError(f"worker {worker} polled for a queued call and got no go-ahead")
        if finish:
            ok, output = uncut.results.get(go.arguments, (True, ""))
            drive.send(Finished, worker, go.attempt, ok, output)
        return go.attempt

    def answer(key: str, approve: bool) -> None:
        uncut.answers[key] = approve
        drive.send(Answer, f"crash-{key}", key, approve)

    ask("lookup", True, "found it")
    run("w1")
    ask("upsert", False, "the service said no")
    run("w1")
    ask("charge", False, "card declined")
    run("w2")
    answer(ask("refund", True, "refunded"), True)
    run("w1")
    answer(ask("refund"), False)
    drive.fire(TimerKind.APPROVAL_DEADLINE, ask("refund"))
    ask("charge", True, "charged")
    run("w3", finish=False)
    drive.fire(TimerKind.HEARTBEAT_TIMEOUT, "w3")
    lookup = ask("lookup", True, "found again")
    drive.fire(TimerKind.RUN_TIMEOUT, run("w2", finish=False))
    drive.fire(TimerKind.RETRY_BACKOFF, lookup)
    run("w2")
    floored = ask(HINTED, True, "hinted", session=FLOORED)
    if drive.views()[floored].status is ToolCallStatus.AWAITING_APPROVAL:
        answer(floored, False)
    else:
        run("w1")
    unfinished = [key for key, view in drive.views().items() if view.status in IN_PROGRESS]
    if unfinished:
        raise SpecError(f"the uncut run left {', '.join(unfinished)} without a record")
    return uncut


def _tool_errors(uncut: Uncut) -> list[str]:
    """A call failed by the tool's own failure carries the tool's message in its error: the
    tool's error is what goes to the model (D-3)."""
    problems = []
    for key, view in uncut.drive.views().items():
        ok, output = uncut.results[uncut.arguments[key]]
        if not ok and output and view.status is ToolCallStatus.FAILED and output not in view.error:
            problems.append(f"D-3: the call {key}, whose tool reported the failure {output!r}, "
                            f"recorded failed with the error {view.error!r}, without the tool's "
                            "message")
    return problems


def _recovered(factory: ExecutorFactory, config: ExecutorConfig, uncut: Uncut, cut: int,
               at: float) -> tuple[TimedDrive, list[Command]]:
    drive = TimedDrive(factory(config), (SESSION, FLOORED), at)
    commands = drive.recover(uncut.drive.journal[:cut], at)
    return drive, commands


def _after_cut(factory: ExecutorFactory, config: ExecutorConfig, uncut: Uncut,
               cut: int) -> list[str]:
    batch = next(b for b in uncut.drive.batches if b.start < cut <= b.end)
    where = (f"after a restart with the journal cut after entry {cut} (entry "
             f"{cut - batch.start} of {batch.end - batch.start} of the batch of {batch.label} "
             f"at {batch.at:g})")
    at = batch.at + 0.5
    drive, commands = _recovered(factory, config, uncut, cut, at)
    waiting = {key: view.approval_deadline for key, view in drive.views().items()
               if view.status is ToolCallStatus.AWAITING_APPROVAL}
    problems = [f"D-8: {where} the call {key}, asked before the cut with no attempt yet, "
                "shows none after recover: nothing it waits for (no person, no backoff) "
                "should hold its first attempt back"
                for key, view in drive.views().items()
                if view.status is ToolCallStatus.RUNNING and not view.attempts]
    problems += [_timer_problem(commands, uncut, key, deadline, at, where)
                 for key, deadline in waiting.items()]
    problems += [_late_problem(factory, config, uncut, cut, key, deadline, where)
                 for key, deadline in waiting.items()]
    for worker in WORKERS:
        drive.send(Connected, worker)
    settled = drive.settle(WORKERS, uncut.results, uncut.answers, SETTLE_ROUNDS)
    views = drive.views()
    if not settled:
        stuck = [key for key, view in views.items() if view.status in IN_PROGRESS]
        problems.append(f"D-8: {where} the calls {', '.join(stuck)} never got a record")
    before = uncut.drive.views()
    for ended in uncut.drive.batches:
        for key in ended.published:
            kept = "was recorded before the cut" if cut >= ended.end else (
                "was cut part-way through the batch that recorded it"
                if ended.start < cut else "")
            now, then = views.get(key), before[key]
            if kept and (now is None or (now.status, now.error) != (then.status, then.error)):
                shown = "is gone" if now is None else f"ends {now.status.value} {now.error!r}"
                problems.append(f"TC-REC-1: {where} the call {key}, which {kept}, {shown}; "
                                f"the uncut run recorded {then.status.value} {then.error!r} "
                                "(D-3)")
    return [problem for problem in problems if problem]


def _approval_timer(commands: list[Command], key: str) -> StartTimer | None:
    timers = [c for c in commands if isinstance(c, StartTimer)
              and c.kind is TimerKind.APPROVAL_DEADLINE and key in (c.key, c.subject)]
    return timers[-1] if timers else None


def _timer_problem(commands: list[Command], uncut: Uncut, key: str, deadline: float | None,
                   at: float, where: str) -> str:
    """The waiting call's approval timer from recover is due its kept deadline after the ask,
    never before the restart (D-32)."""
    timer = _approval_timer(commands, key)
    if timer is None:
        return f"D-32: {where} the call {key} waiting for a person got no approval timer"
    if deadline is None:
        return ""
    due = max(at, uncut.asked[key] + deadline)
    if timer.delay < 0 or abs(at + timer.delay - due) > 1e-6:
        return (f"D-32: {where} the approval timer of {key} has the delay {timer.delay:g}, "
                f"due at {at + timer.delay:g}, not {due:g} (asked at {uncut.asked[key]:g} "
                f"with a deadline of {deadline:g} s)")
    return ""


def _late_problem(factory: ExecutorFactory, config: ExecutorConfig, uncut: Uncut, cut: int,
                  key: str, deadline: float | None, where: str) -> str:
    """A restart after a waiting call's deadline passed starts its approval timer with the
    delay 0, and the call is then rejected by the deadline (D-32)."""
    late = uncut.asked[key] + (config.approval_deadline if deadline is None else deadline) + 1.0
    drive, commands = _recovered(factory, config, uncut, cut, late)
    where = where.replace("after a restart", "after a restart past the approval deadline")
    timer = _approval_timer(commands, key)
    if timer is None:
        return f"D-32: {where} the call {key} waiting for a person got no approval timer"
    if timer.delay != 0:
        return (f"D-32: {where} the approval timer of {key} has the delay {timer.delay:g}, "
                "not 0: its deadline has passed")
    drive.fire(TimerKind.APPROVAL_DEADLINE, key)
    status = drive.views()[key].status
    if status is not ToolCallStatus.REJECTED:
        return (f"D-32: {where} the call {key} is {status.value} once its approval timer fired, "
                "not rejected by the deadline")
    return ""


def _floor(factory: ExecutorFactory, config: ExecutorConfig, uncut: Uncut) -> list[str]:
    """The same hinted call asked in the floored session after a restart keeps the policy
    it was asked under before (D-22)."""
    journal = uncut.drive.journal
    drive, _ = _recovered(factory, config, uncut, len(journal), uncut.drive.clock + 1.0)
    before = next(v for k, v in uncut.drive.views().items()
                  if k.startswith(f"{FLOORED}/") and v.tool == HINTED)
    drive.send(Ask, FLOORED, "t-after", "c-after", HINTED, '{"n": 0}')
    after = drive.views()[f"{FLOORED}/t-after/c-after"]
    if (after.effect, after.requires_approval) != (before.effect, before.requires_approval):
        return [f"D-22: after a restart a call of {HINTED} (hinted read-only) in a session whose "
                f"default is a floor keeps the effect {after.effect} with approval "
                f"{after.requires_approval}; asked before the restart it kept {before.effect} "
                f"with approval {before.requires_approval}"]
    return []


def _fence(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    """With the fence on, a single-attempt run out at a worker when the server stops, and a
    worker that never comes back: it must be declared lost after the restart, and a new call
    of that tool then run (D-6, D-8, D-12)."""
    config = replace(config, fence=True)
    drive = TimedDrive(factory(config), (SESSION,))
    drive.send(SetPolicy, "charge", TOOLS["charge"])
    drive.send(OpenSession, SESSION, None, True)
    drive.send(Connected, "w1")
    drive.send(Ask, SESSION, "t1", "c1", "charge", '{"n": 1}')
    if drive.poll("w1") is None:
        return ["D-6: the fence probe's single-attempt call got no go-ahead"]
    after = TimedDrive(factory(config), (SESSION,), drive.clock + 1.0)
    after.recover(list(drive.journal), after.clock)
    after.send(Connected, "w2")
    after.send(Ask, SESSION, "t2", "c2", "charge", '{"n": 2}')
    for _ in range(SETTLE_ROUNDS):
        if after.poll("w2") is not None:
            return []
        if after.views()[f"{SESSION}/t2/c2"].status not in IN_PROGRESS or not after.fire_next():
            break
    return ["D-12: with the fence on, after a restart the worker that held a single-attempt run "
            "of charge when the server stopped never came back and was never declared lost, so "
            "a new call of charge never ran (D-6, D-8)"]
