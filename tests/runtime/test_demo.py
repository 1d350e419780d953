"""`atmostonce demo` runs a session end to end on real processes, says what happened, cleans
up and exits 0 well within a minute."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.load import patience


@pytest.mark.clause("TC-AMO-2", "TC-APR-3", "TC-RCN-TELL", "TC-RCN-ONCE")
def test_the_demo_runs_end_to_end_and_exits_0() -> None:
    done = subprocess.run([sys.executable, "-m", "atmostonce.runtime", "demo"],
                          capture_output=True, text=True, timeout=60 * patience(), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for line in ("lookup_order(order 1002)", "a person approves it: accepted",
                 "killed worker process", "outcome_unknown", "send_user_message -> True",
                 "finds 0 call(s) left to report", "final get_agent_snapshot", "done"):
        assert line in out
