"""A short chaos run per nemesis on the reference runtime is clean: the history built from the
clients, the ledger, the journal and the faults breaks no property, no record a client saw is
lost, every call got a record, and every process the run started is gone afterwards."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from atmostonce.chaos.nemesis import NemesisKind
from atmostonce.chaos.options import ChaosOptions
from atmostonce.chaos.report import chaos_text
from atmostonce.chaos.result import ChaosResult
from atmostonce.chaos.run import run_chaos
from atmostonce.engines.adapter import CutMode
from atmostonce.sim.shapes import SHAPES
from tests.chaos.conftest import chaos
from tests.load import patience
from tests.runtime.conftest import gone

DURATION = 6.0
"""Seconds of faults on an idle machine; longer under load, where each fault takes longer to
inject and fewer fit in the same wall-clock time."""
PACE = 2.0
AT_LEAST = 2
"""Faults of the kind under test each run must have had; the nemesis goes on past the
duration until it has (bounded), so a slow machine cannot make a run too thin to mean much."""


def clean(result: ChaosResult) -> None:
    assert result.ok, chaos_text(result)
    assert result.drained
    assert result.stats.calls >= 10
    assert result.pids
    assert all(gone(pid) for pid in result.pids)
    assert result.kept is None
    assert not any(Path(tempfile.gettempdir()).iterdir()), "a passing run left files behind"


def run(kind: NemesisKind, seed: int, cuts: tuple[CutMode, ...] = tuple(CutMode)
        ) -> ChaosResult:
    return run_chaos(ChaosOptions(duration=DURATION * patience(), nemesis=(kind,), pace=PACE,
                                  seed=seed, cuts=cuts, min_faults=AT_LEAST))


@pytest.mark.clause("TC-AMO-1", "TC-AMO-2", "TC-REC-LOST", "TC-REC-EXHAUST-OTHER",
                    "TC-REC-RETRY")
def test_workers_killed_with_sigkill() -> None:
    result = run(NemesisKind.KILL, 1)
    clean(result)
    assert result.faults.counts().get("kill", 0) >= AT_LEAST


@pytest.mark.clause("D-12", "TC-REC-LOST")
def test_workers_paused_with_sigstop() -> None:
    result = run(NemesisKind.PAUSE, 2)
    clean(result)
    assert result.faults.counts().get("pause", 0) >= AT_LEAST


@pytest.mark.clause("D-12", "TC-REC-LOST")
def test_worker_connections_held() -> None:
    """Held only: a reset shorter than the lease breaks D-12 (test_findings)."""
    result = run(NemesisKind.PARTITION, 3, (CutMode.HOLD,))
    clean(result)
    assert result.faults.counts().get("partition-hold", 0) >= AT_LEAST


@pytest.mark.clause("D-8", "D-5", "TC-REC-1", "TC-RCN-ONCE")
def test_server_killed_and_restarted_from_its_journal_through_the_command() -> None:
    done = chaos("--duration", "6", "--nemesis", "restart", "--pace", "3", "--seed", "4",
                 "--min-faults", "1", "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    for field in ("operations", "faults", "violations", "lost_records", "double_runs"):
        assert field in report
    assert isinstance(report["operations"], int)
    assert report["operations"] > 0
    assert report["faults"].get("restart", 0) >= 1
    assert report["server_restarts"] >= 1
    assert (report["violations"], report["lost_records"], report["errors"]) == ([], [], [])
    assert isinstance(report["double_runs"], list)
    assert set(report["shapes"]) == {shape.key for shape in SHAPES}
    assert report["shapes"]["policy_and_hints"] + report["shapes"]["session_default"] > 0
    assert report["verdict"] == "pass"
    assert "atmostonce chaos: started the effect ledger" in done.stderr
    assert all(gone(pid) for pid in report["pids"])


@pytest.mark.clause("TC-REC-LOST")
def test_a_run_too_short_for_its_faults_goes_on_until_each_kind_has_its_minimum() -> None:
    """Half a second at the default pace fits no kill at all (the first comes after 0.6 s or
    more); the nemesis goes on until there have been two."""
    result = run_chaos(ChaosOptions(duration=0.5, nemesis=(NemesisKind.KILL,), seed=5,
                                    min_faults=AT_LEAST))
    assert result.ok, chaos_text(result)
    assert result.faults.counts().get("kill", 0) >= AT_LEAST
    assert "--min-faults 2" in result.options.command()
