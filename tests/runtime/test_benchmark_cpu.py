"""The runtime benchmark's CPU reading: a process's CPU seconds grow while it works and are
missing, not zero, for a process that is not there."""

from __future__ import annotations

import os
import sys
import time

import pytest

from benchmarks.runtime import _cpu_seconds

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_cpu_seconds_grow_while_the_process_works() -> None:
    before = _cpu_seconds(os.getpid())
    assert before is not None
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    after = _cpu_seconds(os.getpid())
    assert after is not None
    assert after - before >= 0.1


def test_cpu_seconds_of_a_missing_process_are_none() -> None:
    assert _cpu_seconds(2**22 + 1) is None
