"""`python -m atmostonce.engines.restate.exec_child BINARY ARGS`: asks Linux to end this process
with its parent, then becomes BINARY (the request survives `execv`), so a Restate server never
outlives the adapter that started it."""

from __future__ import annotations

import os
import sys

from atmostonce.runtime.processes import exit_with_parent

if __name__ == "__main__":
    exit_with_parent()
    os.execv(sys.argv[1], sys.argv[1:])
