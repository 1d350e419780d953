"""How a call's policy is resolved, probed over the whole input space on fresh executors:
every ToolPolicy (unset, or each effect class with requires_approval unset, true or false),
every combination of framework metadata hints (each hint unset, true or false, or none at
all), every session default (unset or each class) under either choice of D-22, and a tool
nobody registered. The model's schedules ask only for the tools of its configurations; this
asks for all of them (TC-POL-1, TC-APR-2, TC-APR-5, D-1, D-11, D-22).

For each case the probe asks one call and checks what the resolution decides, as the session
API and the records show it: whether the call waits for approval, the effect class and
approval rule the snapshot shows (when it shows them), and the record it ends with when every
attempt times out, which tells the retrying classes from the single-attempt ones and a read
from a write. Then it changes the tool's policy to another case and asks again: the first
call keeps what it was asked under, the second follows the change (TC-SNAP-1, TC-SNAP-2).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from atmostonce.check.probes.drive import Drive
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
    ToolHints,
    ToolPolicy,
    resolve_policy,
)
from atmostonce.spec.protocol import (
    Answer,
    Ask,
    Connected,
    Executor,
    ExecutorConfig,
    ExecutorFactory,
    OpenSession,
    SetPolicy,
    TimerKind,
)
from atmostonce.spec.records import AttemptEnd, Record, decide
from atmostonce.spec.session import ToolCallStatus

TOOL = "policy_probe_tool"
SESSION = "policy-probe"
WORKER = "probe-worker"
MAX_ATTEMPTS = 2
"""Two attempts: a retrying class is attempted again after a time-out, a single-attempt class
is not, and after the second a read records failed where a write records outcome_unknown."""

POLICIES: tuple[ToolPolicy | None, ...] = (None, *(
    ToolPolicy(effect, approval) for effect in EffectClass for approval in (None, True, False)))
HINTS: tuple[ToolHints | None, ...] = (None, *(
    ToolHints(r, i, d) for r, i, d in itertools.product((None, True, False), repeat=3)))
DEFAULTS: tuple[EffectClass | None, ...] = (None, *EffectClass)


@dataclass(frozen=True)
class Case:
    """One input of the resolution: what is registered for the tool, if anything, and the
    session's default and D-22 choice."""

    registered: bool
    policy: ToolPolicy | None
    hints: ToolHints | None
    default: EffectClass | None
    hints_may_lower: bool

    def expected(self) -> EffectivePolicy:
        return resolve_policy(self.policy, self.hints, self.default, self.hints_may_lower)

    def describe(self) -> str:
        tool = (f"policy {_policy_text(self.policy)}, hints {_hints_text(self.hints)}"
                if self.registered else "a tool nobody registered")
        default = self.default.value if self.default is not None else "unset"
        return (f"{tool}, session default {default}, hints "
                f"{'may' if self.hints_may_lower else 'may not'} lower it")


def cases() -> Iterator[Case]:
    """Every case: each registration for each session default and D-22 choice, then the
    unregistered tool for each."""
    for default, lower in itertools.product(DEFAULTS, (True, False)):
        for policy, hints in itertools.product(POLICIES, HINTS):
            yield Case(True, policy, hints, default, lower)
        yield Case(False, None, None, default, lower)


def probe_policies(factory: ExecutorFactory, config: ExecutorConfig, limit: int = 3
                   ) -> list[str]:
    """One line for each of the first `limit` cases the executor resolved otherwise than the
    spec, and one counting the rest; empty when it resolved every case as the spec does."""
    config = replace(config, max_attempts=MAX_ATTEMPTS)
    registrations = [(p, h) for p in POLICIES for h in HINTS]
    problems: list[str] = []
    wrong = 0
    for number, case in enumerate(cases()):
        later_policy, later_hints = registrations[(number * 11 + 5) % len(registrations)]
        later = replace(case, registered=True, policy=later_policy, hints=later_hints)
        try:
            problem = _one(factory(config), case, later, config.cancel_records_failed)
        except SpecError as error:
            problem = f"the executor refused it: {error}"
        except Exception as error:
            problem = f"the executor failed on it: {type(error).__name__}: {error}"
        if problem:
            wrong += 1
            if len(problems) < limit:
                problems.append(f"policy resolution: {case.describe()}: {problem}")
    if wrong > len(problems):
        problems.append(f"policy resolution: {wrong - len(problems)} more cases resolved "
                        "otherwise than the spec")
    return problems


def _one(executor: Executor, first: Case, later: Case, cancel_records_failed: bool) -> str:
    drive = Drive(executor, SESSION)
    if first.registered:
        drive.send(SetPolicy, TOOL, first.policy, first.hints)
    drive.send(OpenSession, SESSION, first.default, first.hints_may_lower)
    drive.send(Connected, WORKER)
    key1 = f"{SESSION}/t1/c1"
    drive.send(Ask, SESSION, "t1", "c1", TOOL)
    problem = _asked(drive, key1, first.expected())
    if problem:
        return problem
    drive.send(SetPolicy, TOOL, later.policy, later.hints)
    key2 = f"{SESSION}/t2/c2"
    drive.send(Ask, SESSION, "t2", "c2", TOOL)
    problem = _asked(drive, key2, later.expected())
    if problem:
        return f"after the tool's policy changed to {_policy_text(later.policy)}, hints " \
               f"{_hints_text(later.hints)}, the next call {problem}"
    return _run_out(drive, {key1: first.expected(), key2: later.expected()},
                    cancel_records_failed)


def _asked(drive: Drive, key: str, expected: EffectivePolicy) -> str:
    status, view = drive.status(key)
    waits = status is ToolCallStatus.AWAITING_APPROVAL
    if status is None:
        return "is not in the snapshot"
    if waits != expected.requires_approval:
        return (f"{'waits' if waits else 'does not wait'} for approval, but the spec resolves "
                f"{_resolved_text(expected)}")
    effect = getattr(view, "effect", None)
    if effect is not None and effect is not expected.effect:
        return (f"shows the effect class {effect.value}, but the spec resolves "
                f"{_resolved_text(expected)} (TC-SNAP-1)")
    shown = getattr(view, "requires_approval", None)
    if shown is not None and shown != expected.requires_approval:
        return (f"shows requires_approval={shown}, but the spec resolves "
                f"{_resolved_text(expected)} (TC-SNAP-1)")
    return ""


def _run_out(drive: Drive, expected: dict[str, EffectivePolicy], cancel_records_failed: bool
             ) -> str:
    """Approve the calls that wait, then time out every attempt they get; each record must be
    the one the spec decides for the call's resolved effect class, under the executor's
    declared choice of D-4."""
    for key, policy in expected.items():
        if policy.requires_approval:
            drive.requests += 1
            drive.send(Answer, f"probe-{drive.requests}", key, True)
    made = dict.fromkeys(expected, 0)
    wanted: dict[str, Record] = {}
    while len(wanted) < len(expected):
        go = drive.poll(WORKER)
        if go is None:
            fired = [drive.fire(TimerKind.RETRY_BACKOFF, key) for key in expected
                     if key not in wanted]
            if any(fired):
                continue
            waiting = [k for k in expected if k not in wanted]
            return (f"{_which(waiting[0], expected)} got no go-ahead for attempt "
                    f"{made[waiting[0]] + 1}, resolved to {_resolved_text(expected[waiting[0]])}")
        key = go.key if go.key in expected else go.attempt.partition("#")[0]
        if key not in expected or key in wanted:
            return f"an attempt {go.attempt} was handed out for no call that needs one"
        made[key] += 1
        if made[key] > MAX_ATTEMPTS:
            return f"{_which(key, expected)} was attempted more often than max_attempts allows"
        if not drive.fire(TimerKind.RUN_TIMEOUT, go.attempt):
            return f"{_which(key, expected)} has no run timeout for attempt {go.attempt}"
        decision = decide(expected[key].effect, AttemptEnd.CANCELLED, made[key], MAX_ATTEMPTS,
                          made[key] > 1, cancel_records_failed)
        if decision.record is not None:
            wanted[key] = decision.record
    for key, record in wanted.items():
        got = drive.records.get(key)
        if got is not record:
            said = got.value if got is not None else "no record"
            return (f"{_which(key, expected)} ended with {said} after {made[key]} timed-out "
                    f"attempt{'s' if made[key] > 1 else ''}, but a call resolved to "
                    f"{_resolved_text(expected[key])} ends with {record.value}")
    return ""


def _which(key: str, expected: dict[str, EffectivePolicy]) -> str:
    return "the call" if key == next(iter(expected)) else "the later call"


def _resolved_text(policy: EffectivePolicy) -> str:
    approval = "with approval" if policy.requires_approval else "without approval"
    return f"{policy.effect.value} {approval}"


def _policy_text(policy: ToolPolicy | None) -> str:
    if policy is None:
        return "unset"
    approval = {None: "approval unset", True: "approval required",
                False: "approval not required"}[policy.requires_approval]
    return f"{policy.effect.value} ({approval})"


def _hints_text(hints: ToolHints | None) -> str:
    if hints is None:
        return "none"
    return (f"read_only={hints.read_only}, idempotent={hints.idempotent}, "
            f"destructive={hints.destructive}")
