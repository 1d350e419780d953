"""The guard (`atmostonce.guard`) as a guarded engine variant's processes share it: one journal
file in the run's directory, the run's attempts, backoff and approval deadline, and the
monotonic clock every process of the machine shares."""

from __future__ import annotations

import time
from pathlib import Path

from atmostonce.guard import Guard, GuardSettings
from atmostonce.spec.protocol import ExecutorConfig

JOURNAL = "guard.db"
"""The guard's journal's file name in the engine's directory."""


def journal_guard(path: Path, config: ExecutorConfig) -> Guard:
    """The guard over the journal at `path`, with the run's attempts, backoff and deadline."""
    return Guard(path, GuardSettings(config.max_attempts, config.retry_backoff,
                                     config.approval_deadline), clock=time.monotonic)
