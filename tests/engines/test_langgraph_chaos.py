"""`atmostonce chaos` on LangGraph: a short run of each variant judges every property
or lists it as not checkable (with the reason), injects only the faults an agent process can
take (kill and pause, never a partition or a server restart), gets every call a record, loses
none, and breaks only the properties `docs/engines.md` reports broken for that variant; without
the `langgraph` extra the engine's path is one line of bad input, and so is `--fence`."""

from __future__ import annotations

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
_CREATE_AGENT = {P.A_ONE_ATTEMPT, P.A_RETRY_CLASSES, P.A_EXHAUSTED_RECORD, P.A_TOOL_RESULT}
_TOOL_NODE = {P.A_ONE_ATTEMPT, P.A_RETRY_CLASSES, P.A_EXHAUSTED_RECORD, P.A_DOUBLE_RUN_SHAPE}
BROKEN = {"create_agent": _CREATE_AGENT, "create_agent_sync": _CREATE_AGENT,
          "tool_node": _TOOL_NODE, "tool_node_sync": _TOOL_NODE, "guarded": set()}
"""What each variant is known to break (`docs/engines.md`): a short run may show fewer, never
another; the guarded variant breaks none."""


def test_without_the_extra_the_engine_is_one_line_of_bad_input() -> None:
    """Run as if LangGraph were not installed: exit 2, one line naming the extra."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['langgraph'] = None; "
         "from atmostonce.cli import main; sys.exit(main(sys.argv[1:]))",
         "chaos", "--engine", "atmostonce.engines.langgraph:tool_node", "--duration", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "atmostonce[langgraph]" in lines[0]
    assert "Traceback" not in done.stderr


def test_the_langgraph_engine_refuses_the_fence_as_bad_input() -> None:
    pytest.importorskip("langgraph")
    done = chaos("--engine", "atmostonce.engines.langgraph:create_agent", "--duration", "1",
                 "--fence", timeout=120)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "no fence" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("variant", sorted(BROKEN))
@pytest.mark.clause("TC-REC-1", "TC-REC-2", "TC-SNAP-1", "D-7")
def test_a_short_chaos_run_judges_every_property_and_breaks_only_the_known_ones(
        tmp_path: Path, variant: str) -> None:
    """The run's files stay in `tmp_path` (checkpoints, the store, the agent processes' notes
    and logs, the ledger), to read when it fails."""
    pytest.importorskip("langgraph")
    from atmostonce.engines.langgraph.adapter import NO_TARGET, NOT_CHECKABLE

    engine = f"atmostonce.engines.langgraph:{variant}"
    result = run_chaos(ChaosOptions(duration=10, seed=1, engine=engine,
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
    assert {v.property for v in result.violations} <= BROKEN[variant], text
    assert set(result.faults.counts()) <= {"kill", "pause"}
    assert all(f"{kind} faults not injected: {why}" in result.notes
               for kind, why in NO_TARGET.items())
    assert result.stats.calls > 10
    assert all(gone(pid) for pid in result.pids)
