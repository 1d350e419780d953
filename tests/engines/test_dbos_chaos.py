"""`atmostonce chaos` on DBOS: a short run of the `steps` variant judges every property or
lists it as not checkable (with the reason), injects only the faults an application process
can take (kill and pause, never a partition or a server restart), gets every call a record,
loses none, and breaks only the properties `docs/engines.md` reports broken; the positive
control runs `tool_in_workflow` (tools as plain workflow code, as Pydantic AI's DBOS
integration runs them) and must exit 1 with the at-most-once property broken by the re-run of a
tool that had finished; without the `dbos` extra the engine's path is one line of bad input,
and so is `--fence`.

    pytest tests/engines/test_dbos_chaos.py -p no:cacheprovider -q -s
"""

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

pytestmark = pytest.mark.slow

P = PropertyId
BROKEN = {P.A_ONE_ATTEMPT, P.A_RETRY_CLASSES, P.A_EXHAUSTED_RECORD, P.A_POLICY_SNAPSHOT}
"""What `steps` is known to break (`docs/engines.md`): a step running when its process is
killed runs again on recovery, also for a single-attempt call, and a crash does not count
against a step's max_attempts. A short run may show fewer, never another."""
AFTER_RECORD = "was handed out after the record"
"""How A-ONE-RECORD's message opens for a run that began after the call had its record."""


def test_without_the_extra_the_engine_is_one_line_of_bad_input() -> None:
    """Run as if DBOS were not installed: exit 2, one line naming the extra."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['dbos'] = None; "
         "from atmostonce.cli import main; sys.exit(main(sys.argv[1:]))",
         "chaos", "--engine", "atmostonce.engines.dbos:steps", "--duration", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "atmostonce[dbos]" in lines[0]
    assert "Traceback" not in done.stderr


def test_the_dbos_engine_refuses_the_fence_as_bad_input() -> None:
    pytest.importorskip("dbos")
    done = chaos("--engine", "atmostonce.engines.dbos:steps", "--duration", "1", "--fence",
                 timeout=120)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "no fence" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.clause("TC-REC-1", "TC-REC-2", "TC-SNAP-1", "D-7")
def test_a_short_chaos_run_judges_every_property_and_breaks_only_the_known_ones(
        tmp_path: Path) -> None:
    """The run's files stay in `tmp_path` (the system database, the store, the processes'
    notes and logs, the ledger), to read when it fails."""
    pytest.importorskip("dbos")
    from atmostonce.engines.dbos.adapter import NO_TARGET, NOT_CHECKABLE

    result = run_chaos(ChaosOptions(duration=15, seed=1, engine="atmostonce.engines.dbos:steps",
                                    workdir=tmp_path / "run"))
    report = chaos_json(result)
    text = chaos_text(result)
    properties = report["properties"]
    assert isinstance(properties, dict)
    judged, unjudged = properties["judged"], properties["not_checkable"]
    assert set(judged) | set(unjudged) == set(PROPERTIES)
    assert not set(judged) & set(unjudged)
    assert unjudged == NOT_CHECKABLE
    assert result.drained, text
    assert result.errors == [], text
    assert result.lost == [], text
    assert {v.property for v in result.violations} <= BROKEN, text
    assert set(result.faults.counts()) <= {"kill", "pause"}
    assert result.faults.counts().get("kill", 0) > 0, text
    assert all(f"{kind} faults not injected: {why}" in result.notes
               for kind, why in NO_TARGET.items())
    assert result.stats.calls > 10
    assert all(gone(pid) for pid in result.pids)


@pytest.mark.clause("TC-AMO-2", "TC-EFF-NONIDEM")
def test_a_tool_run_as_workflow_code_runs_again_after_a_crash_though_it_had_finished() -> None:
    """The positive control: `tool_in_workflow` under kills. DBOS recovers a killed process's
    session workflow by running it again from its start; the steps replay their checkpointed
    outputs, but a tool run as plain workflow code is run again, although it had returned and
    the call had its record: `atmostonce chaos` exits 1 with A-ONE-ATTEMPT broken, on a call
    whose second run was handed out after its record (A-ONE-RECORD)."""
    pytest.importorskip("dbos")
    done = chaos("--engine", "atmostonce.engines.dbos:tool_in_workflow", "--nemesis", "kill",
                 "--duration", "15", "--seed", "1", "--json", timeout=150)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)
    violations = report["violations"]
    again = {v["call"] for v in violations
             if v["property"] == P.A_ONE_RECORD and v["message"].startswith("attempt ")
             and AFTER_RECORD in v["message"]}
    broken = [v for v in violations if v["property"] == P.A_ONE_ATTEMPT and v["call"] in again]
    assert broken, [(v["property"], v["message"]) for v in violations][:20]
    shortest = min(broken, key=lambda v: len(v["entries"]))
    finished = next(v for v in violations if v["property"] == P.A_ONE_RECORD
                    and v["call"] == shortest["call"] and AFTER_RECORD in v["message"])
    print(f"{shortest['property']} [{shortest['call']}]: {shortest['message']}",
          *shortest["entries"], f"{finished['property']}: {finished['message']}",
          *finished["entries"], sep="\n")
