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
from typing import Any

import pytest

from atmostonce.check.history.call_edges import NOT_FROM_HISTORY
from atmostonce.model.diagrams import svg_of
from atmostonce.report.counts import layer_counts
from atmostonce.report.page import Check, Page, Section
from atmostonce.report.page import render as render_page
from atmostonce.report.plots import NUMBER_ID
from atmostonce.sim.report_page import HISTORY_MEANING, UNCOUNTED
from tests.load import patience
from tests.report.browser import measure, render

ROOT = Path(__file__).resolve().parent.parent.parent
ARTEFACTS = Path(os.environ.get("ATMOSTONCE_ARTEFACTS", ROOT / "test-artefacts"))
MUTANT = "atmostonce.executor.mutants:retry_non_idempotent"

RUNS = {
    "verify-mutant": (["verify", "--layers", "conformance,simulation", "--executor", MUTANT], 1),
    "simulate": (["simulate", "--seeds", "20"], 0),
    "chaos": (["chaos", "--duration", "3", "--seed", "1"], 0),
    "chaos-mapping": (["chaos", "--duration", "3", "--seed", "1", "--engine",
                       "tests.report.leased_engine:engine"], 0),
}
READABLE = 9.0
"""CSS pixels: the smallest text a diagram or a bar's number may render at."""
MOST_RATIO = 2.05
"""An embedded diagram's longer side over its shorter (2:1, and a rounding's slack)."""
NUMBER = re.compile(r"^\d[\d,]*( \(.*\))?$")


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
    for section in re.findall(r'<section class="layer".*?</section>', dom, re.S):
        assert section.count('class="notmeasured"') <= 1, "one note per layer"
    if name != "verify-mutant":
        assert re.findall(r'class="notmeasured" data-machines="([^"]*)"', dom) == [
            " ".join(UNCOUNTED)]
    assert "never taken" in dom
    if name == "verify-mutant":
        charts = re.findall(r'<div class="chart counterexample">(.*?)</div>', dom, re.S)
        assert len(charts) >= 2
        assert all("<svg" in c for c in charts)
        assert "Conformance disagreement" in dom
        assert "A-ONE-ATTEMPT" in dom
    if name.startswith("chaos"):
        assert "Timeline" in dom
    if name == "chaos-mapping":
        assert "Guarantees that hold only through the mapping" in dom
        assert "<td>A-DOUBLE-RUN-SHAPE</td>" in dom
    assert _non_blank(shown.screenshot) > 0.05
    _readable(measure(page))


def _readable(found: dict[str, Any]) -> None:
    """Every embedded diagram keeps its shape and readable text; the records bars show their
    numbers, readable too."""
    assert found["diagrams"]
    for d in found["diagrams"]:
        ratio = max(d["width"] / d["height"], d["height"] / d["width"])
        assert ratio <= MOST_RATIO, f"diagram out of shape: {d}"
        assert d["smallest"] >= READABLE, f"diagram text too small: {d}"
    bars = [p for p in found["plots"] if p["title"] == "Records per effect class"]
    assert bars
    for plot in bars:
        numbers = [t for t in plot["texts"] if t["id"].startswith(NUMBER_ID)]
        assert numbers, f"no bar numbers: {plot['texts']}"
        assert all(NUMBER.match(t["text"]) for t in numbers), numbers
        assert min(t["px"] for t in numbers) >= READABLE, numbers


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


def test_the_measure_catches_a_wide_diagram_and_bars_without_numbers(tmp_path: Path) -> None:
    """CallTool drawn as it was (left to right, `tests/model/wide-CallTool.dot`) renders far
    wider than 2:1 in the report, its labels shrunk below readable; a records chart whose bars
    carry no numbers has none to find."""
    counts = layer_counts("runtime", HISTORY_MEANING, {},
                          dict.fromkeys(UNCOUNTED, NOT_FROM_HISTORY), keep_outside=True)
    bars = '<div class="chart plot"><h3>Records per effect class</h3><svg></svg></div>'
    html = render_page(Page("t", "c", "s", True,
                            (Section("runtime", (Check("c", True, "ok"),), counts=counts),)))
    wide = svg_of((ROOT / "tests" / "model" / "wide-CallTool.dot").read_text())
    start = html.index('<div class="diagram" data-machine="CallTool">')
    svg_start = html.index("<svg", start)
    svg_end = html.index("</svg>", svg_start) + len("</svg>")
    page = tmp_path / "wide.html"
    page.write_text(html[:svg_start] + wide[wide.index("<svg"):] + html[svg_end:]
                    .replace("</section>", bars + "</section>"))
    found = measure(page)
    call_tool = next(d for d in found["diagrams"] if d["machine"] == "CallTool")
    assert call_tool["width"] / call_tool["height"] > 4
    assert call_tool["smallest"] < READABLE
    with pytest.raises(AssertionError, match="diagram out of shape"):
        _readable(found)
    found["diagrams"] = [d for d in found["diagrams"] if d["machine"] != "CallTool"]
    with pytest.raises(AssertionError, match="no bar numbers"):
        _readable(found)
