"""A `--check` for `atmostonce reconcile` that lets a test stop the job where it wants.

The job calls `check(key, arguments)` once per pending call, right before it sends that call's
report. This check leaves a marker file `checking-N` in $RECONCILE_MARKERS for its N-th call;
for the first call it then waits until the test creates `go`, and for any later call it hangs,
so the test knows the job has sent exactly one report when it kills it. A marker appears whole
(written aside, then renamed), so a test that sees it also reads its key.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

FINDING = "the order service holds this operation"


def check(key: str, arguments: str) -> str:
    markers = Path(os.environ["RECONCILE_MARKERS"])
    number = len(list(markers.glob("checking-*"))) + 1
    partial = markers / f".checking-{number}"
    partial.write_text(key)
    partial.replace(markers / f"checking-{number}")
    if number > 1:
        time.sleep(3600)
    deadline = time.monotonic() + 30
    while not (markers / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return FINDING
