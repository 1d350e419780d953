"""Starting the Temporal mapping's processes so that none outlives the thread that started it.

Each child is started with `ATMOSTONCE_PARENT_PID` set, like the runtime's processes
(`atmostonce.runtime.processes`), and asks Linux at its start to be killed when its parent
goes. The Temporal CLI is a Go program that cannot ask that itself, so it is started through
`python -m atmostonce.engines.temporal.process BINARY ARGS`, which asks and then becomes the
binary (the request survives `execv`).
"""

from __future__ import annotations

import os
import sys

from atmostonce.runtime.processes import exit_with_parent


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


if __name__ == "__main__":
    exit_with_parent()
    os.execv(sys.argv[1], sys.argv[1:])
