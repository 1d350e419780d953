"""Shared pieces of the chaos tests: running `atmostonce chaos` as a command, and each test's
temporary files (a failing run keeps its own) under its `tmp_path`."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.load import patience

ROOT = Path(__file__).resolve().parent.parent.parent


def chaos(*args: str, timeout: float = 120.0,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "atmostonce", "chaos", *args], cwd=ROOT,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout * patience(), check=False)



@pytest.fixture(autouse=True)
def runs_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chaos runs made by the test, in process or as a command, put their temporary
    directories under `tmp_path`: a failing run keeps its files, and they go with the test's."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
