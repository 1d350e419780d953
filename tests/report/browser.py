"""Opening a report page in Debian's headless chromium: its DOM after rendering, any console
error, and a screenshot."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.load import patience

CHROMIUM = "/usr/bin/chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0")


@dataclass(frozen=True)
class Rendered:
    dom: str
    console: list[str]
    screenshot: Path


def chromium() -> str:
    found = shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)
    if found is None:
        pytest.fail("the browser test needs Debian's chromium: apt-get install chromium",
                    pytrace=False)
    return found


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=60 * patience(), check=False)


def render(page: Path, screenshot: Path, width: int = 1400, height: int = 2400) -> Rendered:
    """The page's DOM once rendered, every console message (a page without scripts has
    none), and a screenshot, from one chromium run."""
    profile = screenshot.parent / f"{screenshot.stem}-profile"
    done = _run(["--dump-dom", f"--screenshot={screenshot}", f"--window-size={width},{height}",
                 page.resolve().as_uri()], profile)
    assert done.returncode == 0, done.stderr[-2000:]
    assert screenshot.exists(), done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines()
               if ":CONSOLE" in line or "Uncaught" in line]
    return Rendered(done.stdout, console, screenshot)


MEASURE = """<script>
function px(t) {
  const m = t.getScreenCTM();
  return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
}
const found = {diagrams: [], plots: []};
for (const d of document.querySelectorAll("div.diagram")) {
  const svg = d.querySelector("svg");
  const box = svg.getBoundingClientRect();
  const sizes = [...svg.querySelectorAll("text")].map(px);
  found.diagrams.push({machine: d.dataset.machine, width: box.width, height: box.height,
                       smallest: Math.min(...sizes), texts: sizes.length});
}
for (const c of document.querySelectorAll("div.chart.plot")) {
  found.plots.push({title: c.querySelector("h3").textContent,
                    texts: [...c.querySelectorAll("svg text")].map(
                      t => ({text: t.textContent.trim(), px: px(t),
                             id: t.closest("g[id]")?.id ?? ""}))});
}
const out = document.createElement("pre");
out.id = "measured";
out.textContent = JSON.stringify(found);
document.body.appendChild(out);
</script>"""
"""Measures, in the browser, each embedded diagram's rendered box and its smallest text in CSS
pixels (font size times the text's scale on screen), and every plot's texts."""


def measure(page: Path, width: int = 1400, height: int = 2400) -> dict[str, Any]:
    """What `MEASURE` finds on a copy of the page (the page itself stays without scripts), laid
    out in a window `width` wide."""
    copy = page.with_name(f"{page.stem}-measured.html")
    copy.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    done = _run(["--dump-dom", f"--window-size={width},{height}", copy.resolve().as_uri()],
                page.parent / f"{page.stem}-measure-profile")
    assert done.returncode == 0, done.stderr[-2000:]
    start = done.stdout.index('<pre id="measured">') + len('<pre id="measured">')
    text = done.stdout[start: done.stdout.index("</pre>", start)]
    found: dict[str, Any] = json.loads(html.unescape(text))
    return found
