"""What the guard's tests share: a clock the test moves, and processes that run a call
through the guard and are killed mid-tool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.load import patience
from tests.runtime.conftest import gone

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 20.0


@dataclass
class Clock:
    """The guard's clock, moved by the test: deadlines pass without waiting."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


def effects(path: Path) -> list[str]:
    """The attempt labels the tool wrote to `path`, one a run."""
    return path.read_text().split() if path.exists() else []


def wait_for(what: str, probe: object) -> None:
    """Poll `probe()` until true, bounded by LIMIT seconds times the machine's patience."""
    deadline = time.monotonic() + LIMIT * patience()
    while not probe():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {LIMIT * patience():.3g} s")
        time.sleep(0.01)


class Children:
    """The processes a test starts; each is gone when the test ends."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, journal: Path, key: str, effect: str, effect_file: Path,
              mode: str, gated: bool = False) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.guard.child", str(journal), key, effect,
             str(effect_file), mode, *(["gated"] if gated else [])], cwd=ROOT,
            stdout=subprocess.PIPE, text=True)
        self.started.append(child)
        return child

    def run_killed(self, journal: Path, key: str, effect: str, effect_file: Path,
                   gated: bool = False) -> None:
        """Start a child, wait until its tool took effect once more, and SIGKILL it."""
        before = len(effects(effect_file))
        child = self.start(journal, key, effect, effect_file, "block", gated)
        wait_for("the tool took effect", lambda: len(effects(effect_file)) > before
                 or child.poll() is not None)
        assert child.poll() is None, "the child ended before its tool took effect"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(LIMIT * patience())

    def stop(self) -> None:
        for child in self.started:
            if child.poll() is None:
                child.kill()
            child.wait(LIMIT * patience())
            if child.stdout is not None:
                child.stdout.close()
        assert all(gone(c.pid) for c in self.started)


@pytest.fixture
def children() -> Iterator[Children]:
    started = Children()
    try:
        yield started
    finally:
        started.stop()
