"""The fence holds back only what D-6 names, probed on a fresh executor with the fence on:
once a run of a single-attempt tool was given up on while it may still go, a new call of that
tool waits, and nothing else does: a single-attempt call of another tool, a call of a retrying
class and, once the abandoned run is over, the waiting call itself all go ahead. The model's
schedules reach a second single-attempt tool only beyond the conformance depth; this asks for
one at once (D-6, TC-AMO-4).
"""

from __future__ import annotations

from dataclasses import replace

from atmostonce.check.probes.drive import Drive
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.protocol import (
    Ask,
    Connected,
    Executor,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    OpenSession,
    SetPolicy,
    TimerKind,
)

SESSION = "fence-probe"
ABANDONED, OTHER, READER = "fenced_write", "other_write", "reader"


def probe_fence(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    """One line naming what the fence held back that D-6 lets go, or let go that it holds;
    empty when it does just what D-6 says."""
    try:
        return _probe(factory(replace(config, fence=True)))
    except SpecError as error:
        return [f"D-6: the executor refused the fence probe: {error}"]
    except Exception as error:
        return [f"D-6: the executor failed on the fence probe: {type(error).__name__}: {error}"]


def _probe(executor: Executor) -> list[str]:
    drive = Drive(executor, SESSION)
    for tool, effect in ((ABANDONED, EffectClass.NON_IDEMPOTENT_WRITE),
                         (OTHER, EffectClass.NON_IDEMPOTENT_WRITE), (READER, EffectClass.READ)):
        drive.send(SetPolicy, tool, ToolPolicy(effect, requires_approval=False))
    drive.send(OpenSession, SESSION, None, True)
    for worker in ("w1", "w2", "w3", "w4"):
        drive.send(Connected, worker)
    drive.send(Ask, SESSION, "t1", "c1", ABANDONED)
    first = drive.poll("w1")
    if first is None:
        return ["D-6: the first call of a single-attempt tool got no go-ahead"]
    if not drive.fire(TimerKind.RUN_TIMEOUT, first.attempt):
        return [f"D-6: attempt {first.attempt} got no run timeout"]
    for number, (tool, worker, what) in enumerate((
            (OTHER, "w2", "a single-attempt call of another tool"),
            (READER, "w3", "a read")), start=2):
        drive.send(Ask, SESSION, f"t{number}", f"c{number}", tool)
        if drive.poll(worker) is None:
            return [f"D-6: with the fence on, {what} was held back while a run of "
                    f"{ABANDONED} that the executor gave up on might still go: the fence "
                    f"holds back only new calls of {ABANDONED}"]
    drive.send(Ask, SESSION, "t4", "c4", ABANDONED)
    if drive.poll("w4") is not None:
        return [f"D-6: with the fence on, a new call of {ABANDONED} went ahead while the run "
                "the executor gave up on might still go"]
    drive.send(Finished, "w1", first.attempt, True)
    if drive.poll("w1") is None:
        return [f"D-6: with the fence on, the new call of {ABANDONED} was still held back after "
                "the abandoned run was over"]
    return []
