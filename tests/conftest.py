"""Test configuration: a fixed, derandomized Hypothesis profile for CI (the default), and a
`dev` profile (HYPOTHESIS_PROFILE=dev) that explores more and keeps its example database
outside the repo."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

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
