"""A worker heard from keeps its attempt (A-HEARD-KEEPS-ATTEMPT) in the simulation: every
heartbeat that reaches the executor is in the history, the reference keeps the property, and
the simulation layer of `verify` alone reports an executor whose heartbeats do not renew a
worker's liveness as a worker declared lost while it was heartbeating."""

from __future__ import annotations

import pytest

from atmostonce import verify
from atmostonce.check.history import entries as h
from atmostonce.executor import reference
from atmostonce.executor.mutants import EXECUTOR_MUTANTS
from atmostonce.sim.run import run_seed
from atmostonce.spec.properties import PropertyId

MUTANT = EXECUTOR_MUTANTS["heartbeat_not_heard"]


@pytest.mark.clause("TC-REC-LOST", "D-12")
def test_heartbeats_that_reach_the_executor_are_in_the_history() -> None:
    run = run_seed(0, "none", reference, keep_history=True)
    assert run.ok
    assert run.history is not None
    beats = [e for e in run.history.entries if isinstance(e, h.HeartbeatDelivered)]
    starts = {(e.worker, e.attempt): e.at for e in run.history.entries
              if isinstance(e, h.StartDelivered)}
    assert beats
    assert all(b.at > starts[b.worker, b.attempt] for b in beats)


@pytest.mark.clause("TC-REC-LOST", "D-12")
def test_the_simulation_layer_alone_reports_a_worker_declared_lost_while_heartbeating(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "SIMULATION_SEEDS", 12)
    result = verify.check_simulation(MUTANT.path, MUTANT.factory)
    assert not result.ok
    first = result.details[1]
    assert first.startswith(f"{PropertyId.A_HEARD_KEEPS_ATTEMPT} ("), result.details
    assert " was declared lost at " in first
    assert "while heartbeating (last heartbeat at " in first
    assert "within the 6 s heartbeat timeout)" in first


def test_the_violation_shows_the_hand_out_the_last_heartbeats_and_the_declaration() -> None:
    caught = run_seed(3, "chaos", MUTANT.factory, MUTANT.path, stop_on=MUTANT.expect,
                      keep_history=True)
    assert caught.history is not None
    found = [v for v in caught.violations if v.property == PropertyId.A_HEARD_KEEPS_ATTEMPT]
    assert found
    excerpt = [caught.history.entries[p] for p in found[0].positions]
    assert [type(e) for e in excerpt] == [h.HandedOut, h.HeartbeatDelivered,
                                          h.HeartbeatDelivered, h.WorkerDeclaredLost]
    assert excerpt[-1].at - excerpt[-2].at < 6.0
