"""Transition counts per layer: measured from what the layer ran, checked against the machines'
edges, and never shown for a machine the layer did not observe."""

from __future__ import annotations

import pytest

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.check.history.call_edges import call_edges
from atmostonce.check.history.state import Call
from atmostonce.check.lockstep.schedule_counts import schedule_edge_counts
from atmostonce.model.check import DEFAULT, choices_for
from atmostonce.model.config import ModelConfig
from atmostonce.model.edge_counts import count_edges
from atmostonce.model.explorer import Explorer
from atmostonce.model.system import System
from atmostonce.report.counts import layer_counts
from atmostonce.sim.campaign import campaign
from atmostonce.sim.stats import Totals
from atmostonce.spec.step_kinds import StepKind

SMALL = ModelConfig(calls=1, faults=1, reasks=0, policy_changes=0, reconcile_crashes=0)


def _explored(config: ModelConfig) -> tuple[System, Explorer, set[tuple[str, str, str]]]:
    system = System(config, choices_for(config))
    explorer = Explorer(system, stop_at_first=False)
    fired = explorer.run().fired
    return system, explorer, fired


def test_model_counts_cover_exactly_the_edges_the_explorer_fired() -> None:
    system, explorer, fired = _explored(SMALL)
    counts = count_edges(system, explorer.states)
    assert {(m, s, t) for m, s, t, _ in counts} == fired
    assert all(n > 0 for n in counts.values())
    layer_counts("model", "test", counts)


def test_counting_leaves_the_explorer_as_it_was() -> None:
    system, explorer, _ = _explored(SMALL)
    before = [len(s) for s in (system._local_memo, system._ws_memo, system._event_memo)]
    count_edges(system, explorer.states)
    assert "_fire" not in vars(system)
    assert [len(s) for s in (system._local_memo, system._ws_memo, system._event_memo)] == before
    again = Explorer(system, stop_at_first=False).run()
    assert again.states == len(explorer.states)


def test_model_counts_are_per_transition_not_per_state() -> None:
    """Every transition asks a call or touches one: the call machines' entry edges are taken
    once per transition that creates a call, so a count can exceed the states."""
    system, explorer, _ = _explored(SMALL)
    counts = count_edges(system, explorer.states)
    asks = sum(1 for s in explorer.states for t in system.successors(s)
               if t.label[0] == StepKind.ASK)
    entries = sum(n for (m, s, t, _), n in counts.items()
                  if m.startswith("Call") and s == "asked")
    assert entries == asks > 0


def test_conformance_counts_are_the_transitions_out_of_states_within_the_depth() -> None:
    depth = 6
    system = System(DEFAULT)
    explorer = Explorer(system, stop_at_first=False, max_depth=depth)
    explorer.run()
    counts = schedule_edge_counts(DEFAULT, depth)
    assert {(m, s, t) for m, s, t, _ in counts} == system.fired_edges()
    from atmostonce.check.lockstep.conformance import schedules

    last_asks = sum(1 for labels in schedules(DEFAULT, depth, edges=True)
                    if labels[-1][0] == StepKind.ASK)
    entries = sum(n for (m, s, t, _), n in counts.items()
                  if m.startswith("Call") and s == "asked")
    assert entries >= last_asks > 0


def _totals(executor: str, seeds: int = 20) -> Totals:
    return campaign(range(seeds), "chaos", load_factory(executor), executor,
                    shrink_first=0).totals


def test_call_edges_agree_with_the_campaigns_records_and_retries() -> None:
    totals = _totals(DEFAULT_EXECUTOR)
    taken = totals.taken

    def total(trigger: str, dest: str | None = None) -> int:
        return sum(n for (_, _, t, d), n in taken.items()
                   if t == trigger and (dest is None or d == dest))

    records = {r: sum(row.get(r, 0) for row in totals.records.values())
               for r in ("succeeded", "failed", "rejected", "outcome_unknown")}
    assert total("start") + total("needs_approval") == totals.calls
    assert total("returned") == records["succeeded"]
    assert total("unknown") == records["outcome_unknown"]
    assert total("reject") + total("deadline") == records["rejected"]
    assert sum(total(t) for t in ("tool_failed", "did_not_run", "may_have_run",
                                  "may_still_run")) + totals.unnamed_failures == records["failed"]
    assert total("retry") == sum(totals.retries.values())
    counted = layer_counts("simulation", "test", taken,
                           dict.fromkeys(("Attempt", "Worker", "Run", "KeyedLedger",
                                          "PlainLedger"), "not from a history"))
    assert not counted.outside


def test_a_broken_executors_edges_outside_the_machines_are_kept_apart() -> None:
    """A single-attempt call attempted twice is a retry the machine does not have: the page
    shows it apart, and counting it as a machine's edge is refused."""
    taken = _totals("atmostonce.executor.mutants:retry_non_idempotent", 40).taken
    bad = ("CallSingleAttemptTool", "attempting", "retry", "attempting")
    assert taken.get(bad, 0) > 0
    not_measured = dict.fromkeys(("Attempt", "Worker", "Run", "KeyedLedger", "PlainLedger"),
                                 "not from a history")
    counted = layer_counts("simulation", "test", taken, not_measured, keep_outside=True)
    assert dict(counted.outside)[bad] == taken[bad]
    with pytest.raises(ValueError, match="CallSingleAttemptTool does not have"):
        layer_counts("simulation", "test", taken, not_measured)


def test_unknown_edges_and_unmeasured_machines_are_refused() -> None:
    with pytest.raises(ValueError, match="Worker does not have"):
        layer_counts("x", "", {("Worker", "up", "fly", "sky"): 1})
    with pytest.raises(ValueError, match="no machine named"):
        layer_counts("x", "", {}, {"Teapot": "why"})
    with pytest.raises(ValueError, match="said not to be measured"):
        layer_counts("x", "", {("Worker", "up", "crash", "crashed"): 1}, {"Worker": "why"})


def test_a_machine_not_measured_has_no_counts_and_a_measured_one_has_every_edge() -> None:
    counted = layer_counts("x", "", {("Worker", "up", "crash", "crashed"): 3},
                           {"Run": "not observed"})
    machines = {m.machine: m for m in counted.machines}
    assert machines["Run"].taken is None
    assert machines["Run"].why == "not observed"
    worker = machines["Worker"].taken
    assert worker is not None
    assert worker[("up", "crash", "crashed")] == 3
    assert len(worker) == 11
    assert sum(worker.values()) == 3


def test_a_call_without_a_record_takes_only_its_entry_edge() -> None:
    from atmostonce.spec.policy import EffectClass, EffectivePolicy, PolicySource

    policy = EffectivePolicy(EffectClass.READ, False, PolicySource.TOOL_POLICY)
    call = Call("s/t/c", "tool", "s", 0, 0.0, policy)
    assert dict(call_edges([call]).counts) == {("CallTool", "asked", "start", "attempting"): 1}
