"""`check --processes N` finds the same distinct states and verdicts as one process, whatever
the processes number their calls, and a user's run of it reports both."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from atmostonce.model.check import DEFAULT
from atmostonce.model.explorer import Explorer
from atmostonce.model.parallel import ParallelExplorer
from atmostonce.model.partition import Partition
from atmostonce.model.system import System

SMALL = DEFAULT.with_(faults=1, reasks=0, policy_changes=0)


@pytest.mark.parametrize("processes", [2, 3])
def test_processes_find_the_serial_states_transitions_and_witnesses(processes: int) -> None:
    serial = Explorer(System(SMALL)).run()
    parallel = ParallelExplorer(System(SMALL), processes, warm_up=1).run()
    assert parallel.processes == processes
    assert (parallel.states, parallel.transitions, parallel.quiescent, parallel.depth) == (
        serial.states, serial.transitions, serial.quiescent, serial.depth)
    assert parallel.witnesses.keys() == serial.witnesses.keys()
    assert (parallel.ok, parallel.complete, parallel.fired) == (
        serial.ok, serial.complete, serial.fired)


def test_the_owner_is_the_same_for_every_state_of_an_orbit_whatever_the_numbering() -> None:
    """Two systems that interned calls in different orders give each orbit one owner."""
    first, second = System(SMALL), System(SMALL)
    explorer = Explorer(first)
    explorer.run()
    for cid in reversed(range(len(first._calls))):  # intern in the opposite order
        call = first.call(cid)
        second.intern((*call[:9], second.runset(first.runs(call[9])), *call[10:]))
    theirs = Partition(second, 7, 0)
    mine = Partition(first, 7, 0)
    naive_differs = False
    for state in explorer.states[::7]:
        renumbered = second.canonical(theirs.decode(mine.encode(state)))
        assert theirs.owner(renumbered) == mine.owner(state)
        naive_differs |= hash(renumbered) % 7 != hash(state) % 7
    assert naive_differs, "a hash of the numbered state would have split orbits: the test bites"


def test_a_worker_that_fails_is_reported_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: object, batches: object) -> None:
        raise ValueError("broken on purpose")

    monkeypatch.setattr("atmostonce.model.parallel.Part.receive", broken)
    with pytest.raises(RuntimeError, match="broken on purpose"):
        ParallelExplorer(System(SMALL), 2, warm_up=1).run()


def test_check_processes_from_the_command_line_reports_the_serial_count() -> None:
    config = DEFAULT.with_(faults=1)
    serial = Explorer(System(config)).run()
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "check", "--faults", "1", "--processes", "2",
         "--json"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["processes"] == 2
    assert (run["states"], run["transitions"], run["quiescent_states"]) == (
        serial.states, serial.transitions, serial.quiescent)
    assert run["ok"]
    assert run["witnessed"] == sorted(serial.witnesses)
    assert run["visited"] == "fingerprint"
    assert 0 < run["missed_probability"] < 1e-9


def test_processes_stop_at_max_states_with_an_incomplete_verdict() -> None:
    result = ParallelExplorer(System(SMALL), 2, max_states=100, warm_up=1).run()
    assert not result.complete
    assert result.stopped_reason == "stopped at --max-states 100"
    assert 100 <= result.states < Explorer(System(SMALL)).run().states
    assert result.unwitnessed == []
