"""`python -m atmostonce.engines.restate.exec_child TMPDIR BINARY ARGS`: asks Linux to end this
process with its parent, points TMPDIR at the run's directory (the Restate server leaves a
temporary directory behind at each start), then becomes BINARY (the request survives
`execv`), so a Restate server never outlives the adapter that started it."""

from __future__ import annotations

import os
import sys

from atmostonce.runtime.processes import exit_with_parent

if __name__ == "__main__":
    exit_with_parent()
    os.environ["TMPDIR"] = sys.argv[1]
    os.execv(sys.argv[2], sys.argv[2:])
