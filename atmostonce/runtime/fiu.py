"""Disk faults injected into a runtime process with libfiu (Debian's `fiu-utils`): the process
is started under `fiu-run -x`, which preloads libfiu's POSIX wrappers and opens a control fifo
per process, and `fiu-ctrl` turns a failure point on and off in it while it runs.

SQLite makes a commit durable with `fdatasync` and writes its pages with `pwrite` (checked on
this platform: failing `fsync` leaves a commit untouched), so these are the points a fault
enables; plain `write` is left alone, for it is also how the process logs.
"""

from __future__ import annotations

import enum
import errno
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from atmostonce.spec.errors import SpecError

FIU_RUN = "fiu-run"
FIU_CTRL = "fiu-ctrl"
CTRL_TIMEOUT = 10.0
"""Seconds `fiu-ctrl` may take to reach a process's control fifo."""


class DiskFault(enum.Enum):
    """A fault of the disk under a process: which calls fail, with which errno."""

    FSYNC_EIO = "fsync-eio"
    WRITE_EIO = "write-eio"
    WRITE_ENOSPC = "write-enospc"

    @property
    def points(self) -> tuple[str, ...]:
        if self is DiskFault.FSYNC_EIO:
            return ("posix/io/sync/fdatasync", "posix/io/sync/fsync")
        return ("posix/io/rw/pwrite",)

    @property
    def errno(self) -> int:
        return errno.ENOSPC if self is DiskFault.WRITE_ENOSPC else errno.EIO


def missing() -> str | None:
    """Why disk faults cannot be injected here (fiu-run or fiu-ctrl not installed), or None."""
    absent = [tool for tool in (FIU_RUN, FIU_CTRL) if shutil.which(tool) is None]
    if absent:
        return (f"{' and '.join(absent)} not found: disk faults need libfiu's tools "
                "(Debian package fiu-utils)")
    return None


def under_fiu(argv: Sequence[str], control: Path) -> list[str]:
    """`argv` started under `fiu-run -x` with its control fifo at `control`-PID; fiu-run
    execs the program, so the PID is the program's."""
    return [FIU_RUN, "-x", "-f", str(control), *argv]


def inject(pid: int, control: Path, fault: DiskFault) -> None:
    """Turn `fault` on in the process `pid` started by `under_fiu` with `control`."""
    _ctrl(pid, control, [f"enable name={point},failinfo={fault.errno}" for point in fault.points])


def clear(pid: int, control: Path, fault: DiskFault) -> None:
    """Turn `fault` off again in the process `pid` (libfiu refuses to disable a point that is
    not on)."""
    _ctrl(pid, control, [f"disable name={point}" for point in fault.points])


def _unhooked() -> dict[str, str]:
    """This process's environment without libfiu's preload and settings, for `fiu-ctrl`: a
    process started under `fiu-run` passes them on to its children."""
    return {name: value for name, value in os.environ.items()
            if name != "LD_PRELOAD" and not name.startswith("FIU_")}


def _ctrl(pid: int, control: Path, commands: list[str]) -> None:
    argv = [FIU_CTRL, "-f", str(control)]
    for command in commands:
        argv += ["-c", command]
    try:
        done = subprocess.run([*argv, str(pid)], capture_output=True, timeout=CTRL_TIMEOUT,
                              check=False, text=True, env=_unhooked())
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SpecError(f"fiu-ctrl could not reach process {pid}: {error}") from None
    said = (done.stdout + done.stderr).strip()
    if done.returncode != 0 or "error" in said.lower():
        raise SpecError(f"fiu-ctrl could not reach process {pid}: "
                        f"{said.splitlines()[0] if said else f'exit {done.returncode}'}")
