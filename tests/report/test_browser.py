"""The HTML report as a person sees it: real `verify`, `simulate` and `chaos` runs write pages
that headless chromium renders without errors, with plots, coloured diagrams and, for a failing
mutant, sequence charts. Each screenshot is kept under the test's tmp_path and copied to
$ATMOSTONCE_ARTEFACTS (default test-artefacts/, not committed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.load import patience
from tests.report.browser import render

ROOT = Path(__file__).resolve().parent.parent.parent
ARTEFACTS = Path(os.environ.get("ATMOSTONCE_ARTEFACTS", ROOT / "test-artefacts"))
MUTANT = "atmostonce.executor.mutants:retry_non_idempotent"

RUNS = {
    "verify-mutant": (["verify", "--layers", "conformance,simulation", "--executor", MUTANT], 1),
    "simulate": (["simulate", "--seeds", "20"], 0),
    "chaos": (["chaos", "--duration", "3", "--seed", "1"], 0),
}


def _write(name: str, tmp: Path) -> Path:
    args, code = RUNS[name]
    page = tmp / f"{name}.html"
    done = subprocess.run([sys.executable, "-m", "atmostonce", *args, "--report", str(page)],
                          cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True,
                          text=True, timeout=180 * patience(), check=False)
    assert done.returncode == code, done.stdout[-3000:] + done.stderr[-3000:]
    return page


def _non_blank(png: Path) -> float:
    """The spread of the screenshot's pixel values: 0 for a blank page."""
    import matplotlib.image

    return float(matplotlib.image.imread(str(png)).std())


def _self_contained(html: str) -> None:
    assert "<script" not in html
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", html)
    assert "@import" not in html
    assert "url(http" not in html


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_the_report_renders_in_a_real_browser(name: str, tmp_path: Path) -> None:
    page = _write(name, tmp_path)
    html = page.read_text()
    _self_contained(html)
    shown = render(page, tmp_path / f"report-{name}.png")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shown.screenshot, ARTEFACTS / shown.screenshot.name)
    assert not shown.console, shown.console
    dom = shown.dom
    assert 'id="verdict"' in dom
    assert ("FAIL" if name == "verify-mutant" else "PASS") in dom
    plots = re.findall(r'<div class="chart plot">.*?</div>', dom, re.S)
    assert plots
    assert all("<svg" in p for p in plots)
    diagrams = re.findall(r'<div class="diagram" data-machine="(\w+)">(.*?)</div>', dom, re.S)
    drawn = {m for m, body in diagrams if "<svg" in body}
    assert {"CallTool", "CallSingleAttemptTool"} <= drawn
    assert all("Not measured in this layer" in body for m, body in diagrams if m not in drawn)
    assert "never taken" in dom
    if name == "verify-mutant":
        charts = re.findall(r'<div class="chart counterexample">(.*?)</div>', dom, re.S)
        assert len(charts) >= 2
        assert all("<svg" in c for c in charts)
        assert "Conformance disagreement" in dom
        assert "A-ONE-ATTEMPT" in dom
    if name == "chaos":
        assert "Timeline" in dom
    assert _non_blank(shown.screenshot) > 0.05


def test_the_browser_check_catches_a_page_that_fails_or_is_blank(tmp_path: Path) -> None:
    """The checks above can fail: a script error reaches the console lines, and an empty page
    is blank."""
    broken = tmp_path / "broken.html"
    broken.write_text('<html><body><script>throw new Error("boom")</script></body></html>')
    shown = render(broken, tmp_path / "broken.png", 400, 300)
    assert any("boom" in line for line in shown.console)
    assert _non_blank(shown.screenshot) < 0.01
    with pytest.raises(AssertionError):
        _self_contained('<img src="https://example.org/x.png">')
