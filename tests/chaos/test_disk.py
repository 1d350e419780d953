"""Disk faults under the reference runtime's server and the effect ledger (libfiu): the correct
server stops on each one it meets and is started again from its journal with nothing
acknowledged lost, so does the correct ledger, started again on its file while the workers'
runs go on, and each positive control (a server that passes over a failed commit, one that
answers before its commit) is caught with a lost acknowledgement and its history excerpt, as is
a ledger that answers a run's start before it is on disk."""

from __future__ import annotations

import re

import pytest

from atmostonce.chaos.nemesis import LEDGER, SERVER, NemesisKind
from atmostonce.chaos.options import ChaosOptions
from atmostonce.chaos.report import chaos_text
from atmostonce.chaos.result import ChaosResult
from atmostonce.chaos.run import run_chaos
from atmostonce.runtime import fiu
from tests.chaos.conftest import chaos
from tests.chaos.test_nemeses import clean
from tests.load import patience
from tests.runtime.conftest import gone

DURATION = 6.0
PACE = 2.0
DRAIN = 15.0
"""Seconds a mutant's run waits for every call's record: it loses some for good."""
ON_THE_SERVER = 25
ON_THE_LEDGER = 27
"""Seeds whose first disk windows fail writes under the server, and under the ledger."""

pytestmark = pytest.mark.skipif(fiu.missing() is not None, reason=str(fiu.missing()))


def run(seed: int, engine: str = "atmostonce.engines.reference:engine",
        drain: float = 60.0) -> ChaosResult:
    return run_chaos(ChaosOptions(duration=DURATION * patience(), nemesis=(NemesisKind.DISK,),
                                  pace=PACE, seed=seed, min_faults=2, engine=engine,
                                  workers=2, drain=drain))


@pytest.mark.clause("D-5", "D-8", "TC-REC-1")
def test_a_server_whose_disk_fails_stops_and_loses_nothing_it_acknowledged() -> None:
    result = run(ON_THE_SERVER)
    clean(result)
    assert result.faults.counts().get("disk", 0) >= 2
    assert result.faults.disk_windows().get(SERVER, 0) >= 1
    exits = result.faults.consequences().get("disk-exit", 0)
    assert exits >= 1, chaos_text(result)
    assert f"stopped on a disk fault and were started again: {exits}," in chaos_text(result)


@pytest.mark.clause("TC-REC-NOTRUN", "TC-RCN-ASK")
def test_a_ledger_whose_disk_fails_stops_is_started_again_and_loses_nothing() -> None:
    result = run(ON_THE_LEDGER)
    clean(result)
    text = chaos_text(result)
    ledger = [f for f in result.faults.faults if f.kind == "disk" and f.target == LEDGER]
    assert ledger, text
    assert all(f.detail.startswith(f"{LEDGER} ") and f.end is not None for f in ledger)
    exits = result.faults.consequences().get("ledger-disk-exit", 0)
    assert exits >= 1, text
    assert f"ledgers: {exits}" in text
    assert "ledger-died" not in result.faults.consequences()


@pytest.mark.parametrize("variant", ["swallows_disk_errors", "acks_before_commit"])
def test_a_server_that_acknowledges_what_is_not_durable_is_caught(variant: str) -> None:
    result = run(1, f"atmostonce.engines.reference:{variant}", DRAIN)
    assert not result.ok
    assert result.lost, chaos_text(result)
    first = result.lost[0]
    assert first.positions, first.line()
    text = chaos_text(result)
    assert f"    {first.line()}" in text
    assert any(line.startswith(f"      #{first.positions[0]} ") for line in text.splitlines())
    assert result.kept is not None
    assert all(gone(pid) for pid in result.pids)


def test_a_ledger_that_answers_a_run_start_before_it_is_on_disk_is_caught() -> None:
    done = chaos("--duration", f"{DURATION * patience():g}", "--nemesis", "disk", "--pace",
                 f"{PACE:g}", "--seed", str(ON_THE_LEDGER), "--min-faults", "2", "--workers", "2",
                 "--ledger-variant", "late-starts", timeout=150.0)
    assert done.returncode == 1, done.stdout + done.stderr
    lost = [line.strip() for line in done.stdout.splitlines()
            if line.startswith("    run_start ")]
    # a lost start of a write is named as lost; a read writes nothing, so its lost start shows
    # as a success no run of the tool returned
    unreturned = re.findall(r"A-SUCCEEDED-RETURNED \[\S+\]: recorded succeeded, but no run of "
                            r"the tool returned a result", done.stdout)
    assert lost or unreturned, done.stdout
    if lost:
        assert re.fullmatch(r"run_start \S+/\S+/\S+: seen a write of \S+#\d+ at \S+, now no "
                            r"run start on record", lost[0]), lost[0]
    assert "--ledger-variant late-starts" in done.stdout
    assert "kept the run's files" in done.stderr
