"""Starting the Temporal mapping's processes so that none outlives the thread that started it.

Each child is started with `ATMOSTONCE_PARENT_PID` set, like the runtime's processes
(`atmostonce.runtime.processes`), and asks Linux at its start to be killed when its parent
goes. The Temporal CLI is a Go program that cannot ask that itself, so it is started through
`python -m atmostonce.engines.temporal.process BINARY ARGS`, which asks and then becomes the
binary (the request survives `execv`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from atmostonce.runtime.processes import PARENT_ENV, Managed

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the thread that started it ends, if the starter
    asked for that; end at once if that thread is gone already."""
    parent = os.environ.pop(PARENT_ENV, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if str(os.getppid()) != parent:
        os._exit(1)


def start(role: str, argv: Sequence[str], log: Path) -> Managed:
    """Start `argv` with its output in `log`, in a session of its own, dying with this
    thread."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env[PARENT_ENV] = str(os.getpid())
    with log.open("ab") as out:
        popen = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return Managed(role, list(argv), log, popen)


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


if __name__ == "__main__":
    die_with_parent()
    os.execv(sys.argv[1], sys.argv[1:])
