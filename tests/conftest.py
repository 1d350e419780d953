"""Test configuration: a fixed, derandomized Hypothesis profile for CI (the default), a `dev`
profile (HYPOTHESIS_PROFILE=dev) that explores more and keeps its example database outside the
repo, and each test's hang bound (pytest-timeout's `timeout`) scaled by the machine's load."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from tests.load import patience

_DB = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "atmostonce" / "hypothesis"

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=200,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=1000,
    database=DirectoryBasedExampleDatabase(str(_DB)),
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A hang still fails with every thread's stack, after the configured bound times the
    load: a test that takes two minutes on an idle machine takes ten on a loaded one."""
    bound = float(config.getini("timeout") or 0) * patience()
    if bound <= 0:
        return
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(bound))
