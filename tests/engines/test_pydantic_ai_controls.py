"""The positive control of Pydantic AI on Temporal, on the real dev server, real worker
processes, a real SIGKILL and the effect ledger, judged by the chaos run's own checkers: a
non-idempotent write whose worker is killed mid-run, after its write.

- `defaults` (Pydantic AI's base activity config: 60 s start-to-close, Temporal's default retry
  policy): Temporal retries the activity on the other worker once the timeout passes, the write
  lands twice, and the checkers must report A-ONE-ATTEMPT and A-RETRY-CLASSES.
- `recommended` (a per-tool `ActivityConfig` with `maximum_attempts=1` and a heartbeat timeout):
  the attempt is declared lost within the heartbeat timeout, the call records outcome_unknown,
  the tool never runs again, and the checkers report nothing.

    pytest tests/engines/test_pydantic_ai_controls.py -p no:cacheprovider -q
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai.durable_exec.temporal")

from atmostonce.chaos.nemesis import Fault
from atmostonce.chaos.observations import now
from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.pydantic_ai import defaults, recommended
from atmostonce.engines.temporal.adapter import TemporalEngine
from atmostonce.spec.policy import EffectClass, ToolPolicy
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.records import OUTCOME_UNKNOWN_ERROR
from atmostonce.spec.session import ToolCallStatus
from tests.engines.temporal_world import World, record, temporal_world, until

pytestmark = pytest.mark.slow

CONFIG = ExecutorConfig(max_attempts=3, retry_backoff=0.2, queue_timeout=10.0, run_timeout=6.0,
                        heartbeat_timeout=2.5, lease=1.0, approval_deadline=30.0)
NO_APPROVAL = {"cancel_order": ToolPolicy(EffectClass.NON_IDEMPOTENT_WRITE,
                                          requires_approval=False)}
RETRIED_WITHIN = 150.0
"""Seconds (times the machine's patience) the defaults' retry may take: the 60 s
start-to-close timeout, Temporal's backoff, and the second run."""


async def killed_after_its_write(world: World) -> tuple[str, ToolCallStatus, str]:
    """Ask a cancel_order that writes at 0.3 s and returns at 4 s; SIGKILL its worker once the
    write landed (noted as the nemesis notes a kill); its key and record, after the page's
    reconcile."""
    await world.observed.set_policies(NO_APPROVAL)
    await world.observed.open_session("s")
    key = await world.observed.ask("s", "t1", "c1", "cancel_order",
                                   json.dumps({"order_id": "1002", "duration": 4.0,
                                               "write_at": 0.3}))
    await until("the write applied", lambda: world.writes(key))
    [run] = world.runs(key)
    worker = next(w for w in world.engine.workers() if run.worker in w.names)
    world.engine.kill_worker(worker)
    world.faults.faults.append(Fault("kill", now(), None, worker.id, worker.names))
    event = await record(world, "s", "c1", RETRIED_WITHIN)
    await world.observed.reconcile("s")
    return key, event.status, event.error


def run(tmp_path: Path, make: Callable[[EngineSetup], TemporalEngine],
        check: Callable[[World, str, ToolCallStatus, str], None]) -> None:
    """The scenario on two workers of the engine `make` builds, then `check` of what happened,
    with the world still up."""
    with temporal_world(tmp_path, CONFIG, workers=2, make=make) as world:
        check(world, *asyncio.run(killed_after_its_write(world)))


@pytest.mark.clause("TC-EFF-NONIDEM", "TC-AMO-2", "TC-POL-2")
def test_pydantic_ais_defaults_run_a_killed_non_idempotent_write_again(tmp_path: Path) -> None:
    run(tmp_path, defaults, twice)


def twice(world: World, key: str, status: ToolCallStatus, error: str) -> None:
    runs = world.runs(key)
    assert [r.attempt for r in runs] == [f"{key}#1", f"{key}#2"]
    assert runs[0].worker != runs[1].worker
    assert [w.applied for w in world.writes(key)] == [True, True]
    assert status is ToolCallStatus.SUCCEEDED
    violations = world.judged().history.violations
    caught = {v.property for v in violations}
    assert {PropertyId.A_ONE_ATTEMPT, PropertyId.A_RETRY_CLASSES} <= caught, \
        [v.line() for v in violations]
    for violation in violations:
        print(violation.line())


@pytest.mark.clause("TC-EFF-NONIDEM", "TC-REC-LOST", "TC-REC-UNK")
def test_the_recommended_settings_record_it_outcome_unknown_and_never_run_it_again(
        tmp_path: Path) -> None:
    run(tmp_path, recommended, once)


def once(world: World, key: str, status: ToolCallStatus, error: str) -> None:
    assert status is ToolCallStatus.OUTCOME_UNKNOWN
    assert error.startswith(OUTCOME_UNKNOWN_ERROR)
    assert [r.attempt for r in world.runs(key)] == [f"{key}#1"]
    assert [w.applied for w in world.writes(key)] == [True]
    violations = world.judged().history.violations
    assert [v.line() for v in violations] == []
