"""Opening a report page in Debian's headless chromium: its DOM after rendering, any console
error, and a screenshot."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

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
