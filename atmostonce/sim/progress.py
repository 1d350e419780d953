"""The progress bar a long campaign shows on stderr: on a terminal a line redrawn in place,
elsewhere a line at every tenth of the seeds; nothing in the first seconds."""

from __future__ import annotations

import time
from typing import TextIO

PROGRESS_AFTER = 2.0
"""Seconds after which a campaign shows a progress bar."""


class ProgressBar:
    """A progress bar on stderr, shown once a campaign has run a few seconds."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.shown = False
        self.last = 0.0
        self.tty = stream.isatty()

    def update(self, done: int, total: int, violations: int) -> None:
        now = time.monotonic()
        if now - self.started < PROGRESS_AFTER or (now - self.last < 0.25 and done < total):
            return
        self.last = now
        width = 30
        filled = width * done // max(total, 1)
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} seeds, "
                f"{violations} violations, {now - self.started:.0f} s")
        if self.tty:
            self.stream.write(f"\r{line}")
        elif done == total or not self.shown or done * 10 // total != (done - 1) * 10 // total:
            self.stream.write(f"{line}\n")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()
