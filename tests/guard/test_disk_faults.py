"""An attempt's intent that cannot be made durable does not run the tool: the guard's journal
commit fails under a real disk fault (libfiu), the guard raises, and the effect never happens."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.runtime import fiu
from atmostonce.runtime.fiu import DiskFault
from tests.load import patience

pytestmark = pytest.mark.skipif(fiu.missing() is not None, reason=str(fiu.missing()))


@pytest.mark.parametrize("fault", list(DiskFault))
@pytest.mark.parametrize("effect", ["non_idempotent_write", "read"])
def test_an_intent_the_disk_refuses_does_not_run_the_tool(
        tmp_path: Path, fault: DiskFault, effect: str) -> None:
    effects = tmp_path / "effects"
    control = tmp_path / "fiu"
    done = subprocess.run(
        fiu.under_fiu([sys.executable, "-m", "tests.guard.disk_child", str(tmp_path / "g.db"),
                       "s/t1/c1", effect, str(effects), fault.value, str(control)], control),
        capture_output=True, text=True, timeout=30 * patience(), check=False,
        cwd=Path(__file__).resolve().parent.parent.parent)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout + done.stderr
    assert "error" in lines[-1], done.stdout + done.stderr
    assert "OperationalError" in lines[-1]["error"]
    assert not effects.exists()
