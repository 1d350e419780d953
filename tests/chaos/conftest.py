"""Shared pieces of the chaos tests: running `atmostonce chaos` as a command, and telling
whether a process is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def chaos(*args: str, timeout: float = 120.0,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "atmostonce", "chaos", *args], cwd=ROOT,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, check=False)


def gone(pid: int) -> bool:
    """Whether the process no longer runs (a zombie waiting for its parent counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
