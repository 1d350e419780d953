"""The scenario report as a person sees it: `simulate --scenario examples/support_agent.toml
--report r.html`, and the same with a sweep, run as commands and opened in headless chromium,
render without console errors, not blank, with every plot drawn and each tool named in them.
Screenshots go to $ATMOSTONCE_ARTEFACTS like the other report pages'."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.sim.scenario import load
from tests.load import patience
from tests.report.browser import render
from tests.report.test_browser import ARTEFACTS, ROOT, _non_blank, _self_contained

SUPPORT = "examples/support_agent.toml"
RUNS = {
    "scenario": ["--seeds", "3"],
    "sweep": ["--seeds", "2", "--sweep", "executor.heartbeat_timeout=4,16"],
}
PLOTS = {
    "scenario": ["Records per tool", "Failed records by reason, per tool",
                 "Time from go-ahead to record, per tool", "Wait for a person, per tool"],
    "sweep": ["Records against executor.heartbeat_timeout", "outcome_unknown per tool",
              "Time from go-ahead to record per tool", "Wait for a person per tool"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_the_scenario_report_renders_in_a_real_browser(name: str, tmp_path: Path) -> None:
    page = tmp_path / f"{name}.html"
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "simulate", "--scenario", SUPPORT, *RUNS[name],
         "--report", str(page)], cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True, text=True, timeout=180 * patience(), check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    _self_contained(page.read_text())
    shown = render(page, tmp_path / f"report-scenario-{name}.png")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shown.screenshot, ARTEFACTS / shown.screenshot.name)
    assert not shown.console, shown.console
    dom = shown.dom
    assert re.search(r'id="verdict"[^>]*>PASS<', dom)
    plots = dict(re.findall(r'<div class="chart plot"><h3>(.*?)</h3>(.*?)</div>', dom, re.S))
    assert list(plots) == PLOTS[name]
    assert all("<svg" in svg and "<path" in svg for svg in plots.values())
    tools = [tool.name for tool in load(str(ROOT / SUPPORT)).tools]
    assert all(f">{tool}<" in plots[PLOTS[name][2]] for tool in tools)
    assert _non_blank(shown.screenshot) > 0.05
