"""A call retried hundreds of times survives a restart, probed on a fresh executor: an
idempotent write whose workers are lost one after another until its attempts run out (300 of
them), then a new executor rebuilt from the journal. It must show the same record, error and
every attempt as before (D-8, D-30, TC-REC-RETRY). The model's schedules make two attempts at
most; attempt numbers past any small-number shortcut (a cache, a narrow field) come only from
here.
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
    OpenSession,
    SetPolicy,
    TimerKind,
)

SESSION = "long-call-probe"
ATTEMPTS = 300
KEY = f"{SESSION}/t1/c1"


def probe_long_call(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    """One line saying how the long call differs after the restart; empty when it does not."""
    config = replace(config, max_attempts=ATTEMPTS)
    try:
        drive = _retried(factory(config))
        made = len(drive.records)
        if made != 1:
            return [f"TC-REC-RETRY: a call allowed {ATTEMPTS} attempts, each lost to its "
                    f"worker, was recorded {made} times, not once"]
        before = drive.status(KEY)[1]
        shown = len(getattr(before, "attempts", ()))
        if shown != ATTEMPTS:
            return [f"TC-REC-RETRY: a call allowed {ATTEMPTS} attempts, each lost to its "
                    f"worker, shows {shown} attempts"]
        after = factory(config)
        after.recover(list(drive.journal), drive.clock + 1.0)
        now = next((v for v in after.snapshot(SESSION).tool_calls if v.tool_call_id == "c1"),
                   None)
    except SpecError as error:
        return [f"D-8: the executor refused the journal of a call with {ATTEMPTS} attempts: "
                f"{error}"]
    except Exception as error:
        return [f"D-8: the executor failed on a call with {ATTEMPTS} attempts: "
                f"{type(error).__name__}: {error}"]
    if now != before:
        return [f"D-8: after a restart the call with {ATTEMPTS} attempts shows {now!r}, "
                f"before {before!r}"]
    return []


def _retried(executor: Executor) -> Drive:
    drive = Drive(executor, SESSION)
    drive.send(SetPolicy, "upsert", ToolPolicy(EffectClass.IDEMPOTENT_WRITE))
    drive.send(OpenSession, SESSION, None, True)
    drive.send(Ask, SESSION, "t1", "c1", "upsert", "{}")
    for number in range(ATTEMPTS):
        worker = f"w{number}"
        drive.send(Connected, worker)
        if drive.poll(worker) is None:
            break
        drive.fire(TimerKind.HEARTBEAT_TIMEOUT, worker)
        if KEY in drive.records or not drive.fire(TimerKind.RETRY_BACKOFF, KEY):
            break
    return drive
