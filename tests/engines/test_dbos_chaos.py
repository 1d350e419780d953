"""`atmostonce chaos` on DBOS: a short run of each variant whose tools run in steps (on DBOS
directly and on Pydantic AI's DBOS integration) judges every property or lists it as not
checkable (with the reason), injects only the faults an application process can take (kill and
pause, never a partition or a server restart), gets every call a record, loses none, and breaks
only the properties `docs/engines.md` reports broken; the positive control runs each variant
whose tools are plain workflow code (`tool_in_workflow`, and Pydantic AI's DBOS integration as
given) and must exit 1 with the at-most-once property broken by the re-run of a tool that had
finished; without the `dbos` extra the engine's path is one line of bad input,
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


STEPS = ["atmostonce.engines.dbos:steps", "atmostonce.engines.pydantic_ai:dbos_steps"]
"""The DBOS variants whose tools run in steps: the page built on DBOS directly, and built on
Pydantic AI's DBOS integration with each tool's body in a step."""
IN_WORKFLOW = ["atmostonce.engines.dbos:tool_in_workflow",
               "atmostonce.engines.pydantic_ai:dbos_defaults"]
"""The DBOS variants whose tools run as workflow code: on DBOS directly, and Pydantic AI's DBOS
integration as given, which wraps model requests in steps but not custom tool functions."""


@pytest.mark.clause("TC-REC-1", "TC-REC-2", "TC-SNAP-1", "D-7")
@pytest.mark.parametrize("engine", STEPS)
def test_a_short_chaos_run_judges_every_property_and_breaks_only_the_known_ones(
        tmp_path: Path, engine: str) -> None:
    """The run's files stay in `tmp_path` (the system database, the store, the processes'
    notes and logs, the ledger), to read when it fails."""
    pytest.importorskip("dbos")
    if "pydantic_ai" in engine:
        pytest.importorskip("pydantic_ai.durable_exec.dbos")
    from atmostonce.engines.dbos.adapter import NO_TARGET, NOT_CHECKABLE

    result = run_chaos(ChaosOptions(duration=15, seed=1, engine=engine,
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
@pytest.mark.parametrize("engine", IN_WORKFLOW)
def test_a_tool_run_as_workflow_code_runs_again_after_a_crash_though_it_had_finished(
        engine: str) -> None:
    """The positive control: a variant whose tools run as workflow code, under kills. DBOS
    recovers a killed process's session workflow by running it again from its start; the steps
    replay their checkpointed outputs, but a tool run as plain workflow code is run again,
    although it had returned and the call had its record: `atmostonce chaos` exits 1 with
    A-ONE-ATTEMPT broken, on a call whose second run was handed out after its record
    (A-ONE-RECORD)."""
    pytest.importorskip("dbos")
    if "pydantic_ai" in engine:
        pytest.importorskip("pydantic_ai.durable_exec.dbos")
    done = chaos("--engine", engine, "--nemesis", "kill",
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


@pytest.mark.clause("TC-AMO-2", "TC-REC-LOST", "TC-REC-RETRY")
def test_through_the_guard_dbos_keeps_every_property_judged_under_kills(tmp_path: Path) -> None:
    """The fix a team can adopt for D-1 and D-3: the `guarded` variant runs each tool step
    through `atmostonce.guard`, so the kills that make `steps` run a single-attempt tool again
    leave no violation: every property judged holds, every call gets a record."""
    pytest.importorskip("dbos")
    result = run_chaos(ChaosOptions(duration=20, seed=1, engine="atmostonce.engines.dbos:guarded",
                                    workdir=tmp_path / "run"))
    text = chaos_text(result)
    assert result.drained, text
    assert result.errors == [], text
    assert result.lost == [], text
    assert result.violations == [], text
    assert result.faults.counts().get("kill", 0) > 0, text
    assert all(gone(pid) for pid in result.pids)
