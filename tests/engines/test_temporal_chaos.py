"""`atmostonce chaos` on Temporal: a short run on the page's mapping passes with every property
either judged or listed as not checkable (with the reason), the deliberately broken mapping
that retries non-idempotent writes is caught by the same run, and without the `temporal` extra
the engine's path is one line of bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.chaos.options import ChaosOptions
from atmostonce.chaos.report import chaos_json, chaos_text
from atmostonce.chaos.run import run_chaos
from atmostonce.spec.properties import PROPERTIES, PropertyId
from tests.chaos.conftest import ROOT, chaos
from tests.runtime.conftest import gone

ENGINE = "atmostonce.engines.temporal:engine"
BROKEN = "atmostonce.engines.temporal:broken_retry_writes"

pytestmark = pytest.mark.slow


def test_without_the_extra_the_engine_is_one_line_of_bad_input() -> None:
    """Run as if temporalio were not installed: exit 2, one line naming the extra."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['temporalio'] = None; "
         "from atmostonce.cli import main; sys.exit(main(sys.argv[1:]))",
         "chaos", "--engine", ENGINE, "--duration", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "atmostonce[temporal]" in lines[0]
    assert "Traceback" not in done.stderr


def test_the_temporal_engine_refuses_the_fence_as_bad_input() -> None:
    pytest.importorskip("temporalio")
    done = chaos("--engine", ENGINE, "--duration", "1", "--fence", timeout=120)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "no fence" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.clause("TC-REC-1", "TC-AMO-1", "TC-REC-LOST", "D-12")
def test_a_short_chaos_run_on_the_mapping_passes_with_every_property_judged_or_not_checkable(
        tmp_path: Path) -> None:
    """The run's files stay in `tmp_path` (histories in the dev server's database, the workers'
    notes and logs, the ledger), to read when it fails."""
    pytest.importorskip("temporalio")
    from atmostonce.engines.temporal.adapter import LEASE_HOLDS, NOT_CHECKABLE

    result = run_chaos(ChaosOptions(duration=12, seed=3, engine=ENGINE,
                                    workdir=tmp_path / "run"))
    report = chaos_json(result)
    assert result.ok, chaos_text(result)
    properties = report["properties"]
    assert isinstance(properties, dict)
    judged, unjudged = properties["judged"], properties["not_checkable"]
    assert set(judged) | set(unjudged) == set(PROPERTIES)
    assert not set(judged) & set(unjudged)
    assert unjudged == NOT_CHECKABLE
    text = chaos_text(result)
    assert f"properties judged: {len(judged)} of {len(PROPERTIES)}" in text
    assert all(f"    {pid}: {why}" in text for pid, why in NOT_CHECKABLE.items())
    assert properties["held_by_mapping"] == LEASE_HOLDS
    assert set(LEASE_HOLDS) <= set(judged)
    assert all(f"    {pid}: {why}" in text for pid, why in LEASE_HOLDS.items())
    verdict = text.splitlines()[-1]
    assert verdict.startswith("verdict: PASS")
    assert ("2 of the judged properties hold only through the mapping's own additions "
            "(A-DOUBLE-RUN-SHAPE, A-NO-ATTEMPT-AFTER-UNKNOWN") in verdict
    assert result.stats.calls > 10
    assert all(gone(pid) for pid in result.pids)


@pytest.mark.clause("TC-EFF-NONIDEM", "TC-AMO-2", "TC-POL-2")
def test_the_mapping_that_retries_non_idempotent_writes_is_caught() -> None:
    """CallTool's retry policy on every class: a non-idempotent write whose worker was killed
    or paused past the heartbeat timeout runs again on the next worker, which the same chaos
    run reports (exit 1). Kills and pauses at four times the usual rate meet a write in the
    middle of its run several times in fifteen seconds."""
    pytest.importorskip("temporalio")
    done = chaos("--engine", BROKEN, "--nemesis", "kill,pause", "--pace", "4", "--duration",
                 "15", "--seed", "1", "--json", timeout=300)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    caught = {v["property"] for v in report["violations"]}
    assert {PropertyId.A_ONE_ATTEMPT, PropertyId.A_RETRY_CLASSES} <= caught, report["violations"]
    assert all(f"--engine {BROKEN}" in v["rerun"] for v in report["violations"])
    assert all(gone(pid) for pid in report["pids"])
