"""`atmostonce chaos` on Pydantic AI over Temporal: a short run of the `recommended` variant
passes with every property either judged or listed as not checkable (with the reason), and
without the extra the engine's path is one line of bad input. The positive control (the
defaults run a killed write again) is `test_pydantic_ai_controls.py`: a chaos run meets it only
when a kill lands on a single-attempt tool mid-run, about one seeded run in two here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.chaos.options import ChaosOptions
from atmostonce.chaos.report import chaos_json, chaos_text
from atmostonce.chaos.result import ChaosResult
from atmostonce.chaos.run import run_chaos
from atmostonce.spec.keys import parse_key
from atmostonce.spec.properties import PROPERTIES
from tests.chaos.conftest import ROOT
from tests.runtime.conftest import gone

RECOMMENDED = "atmostonce.engines.pydantic_ai:recommended"

pytestmark = pytest.mark.slow


def test_without_the_extra_the_engine_is_one_line_of_bad_input() -> None:
    """Run as if pydantic_ai were not installed: exit 2, one line naming the extra."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['pydantic_ai'] = None; "
         "from atmostonce.cli import main; sys.exit(main(sys.argv[1:]))",
         "chaos", "--engine", RECOMMENDED, "--duration", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "atmostonce[pydantic-ai]" in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.clause("TC-REC-1", "TC-AMO-1", "TC-REC-LOST", "TC-EFF-NONIDEM")
def test_a_short_chaos_run_of_the_recommended_settings_passes_judged_or_not_checkable(
        tmp_path: Path) -> None:
    """Every fault kind, 12 s. The run's files stay in `tmp_path` to read when it fails."""
    pytest.importorskip("pydantic_ai.durable_exec.temporal")
    from atmostonce.engines.pydantic_ai.adapter import NOT_CHECKABLE

    result = run_chaos(ChaosOptions(duration=12, seed=3, engine=RECOMMENDED,
                                    workdir=tmp_path / "run"))
    report = chaos_json(result)
    if not result.ok:
        _only_the_engines_wedge(result)
    properties = report["properties"]
    assert isinstance(properties, dict)
    judged, unjudged = properties["judged"], properties["not_checkable"]
    assert set(judged) | set(unjudged) == set(PROPERTIES)
    assert not set(judged) & set(unjudged)
    assert unjudged == NOT_CHECKABLE
    text = chaos_text(result)
    assert all(f"    {pid}: {why}" in text for pid, why in NOT_CHECKABLE.items())
    assert result.stats.calls > 10
    assert all(gone(pid) for pid in result.pids)


WEDGED = re.compile(r"engine finding: Temporal wedged session (\S+): ")


def _only_the_engines_wedge(result: ChaosResult) -> None:
    """A failed run passes here only as an expected failure, and only when every violation and
    lost record is a call of a session Temporal wedged (P-7 in docs/engines.md: the SDK wrote a
    history it cannot replay), which the report names; anything else fails the test."""
    text = chaos_text(result)
    wedged = {m.group(1) for note in result.notes if (m := WEDGED.search(note))}
    assert wedged, text
    keys = [v.key for v in result.violations] + [lost.key for lost in result.lost]
    assert all(parse_key(key).flow_id in wedged for key in keys if key), text
    assert not result.executor_failures, text
    assert all("TMPRL1100" in error for error in result.errors), text
    pytest.xfail(f"Temporal wedged session(s) {', '.join(sorted(wedged))} (P-7): "
                 f"{len(keys)} violations and lost records, all theirs")
