"""Shared pieces of the chaos tests: running `atmostonce chaos` as a command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.load import patience

ROOT = Path(__file__).resolve().parent.parent.parent


def chaos(*args: str, timeout: float = 120.0,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "atmostonce", "chaos", *args], cwd=ROOT,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout * patience(), check=False)

