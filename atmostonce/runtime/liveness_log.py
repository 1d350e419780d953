"""The server's liveness log: each worker hello and heartbeat the server hands its executor, at
the executor's clock, so that an observer outside can judge whether a worker declared lost was
still heard from (A-HEARD-KEEPS-ATTEMPT); the journal holds neither. Off unless
`serve --liveness-log FILE` names a file.

One JSON object a line, appended by every life of the server in turn::

    {"type": "connected", "at": T, "worker": W}
    {"type": "heartbeat", "at": T, "worker": W, "attempt": A}

A line is written, and handed to the operating system, before the executor takes the message,
so a server killed at any moment never leaves an effect of a message in its journal without
the message's line. A chaos run's workers heartbeat four times a lease each while a tool runs:
a few lines a second.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LivenessNote:
    """One line of the log: a worker connected (`attempt` empty) or heartbeated."""

    kind: str
    at: float
    worker: str
    attempt: str = ""


class LivenessLog:
    """The log's writer, open for appending until `close`."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("a", encoding="utf-8")

    def connected(self, at: float, worker: str) -> None:
        self._write({"type": "connected", "at": at, "worker": worker})

    def heartbeat(self, at: float, worker: str, attempt: str) -> None:
        self._write({"type": "heartbeat", "at": at, "worker": worker, "attempt": attempt})

    def _write(self, note: dict[str, object]) -> None:
        self._file.write(json.dumps(note, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_liveness(path: Path) -> list[LivenessNote]:
    """Every note of the log at `path`, in order; none when it is missing. A line that is not
    a whole note (a server killed while writing it) is skipped."""
    if not path.exists():
        return []
    notes = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(raw, dict):
            continue
        at = raw.get("at")
        if raw.get("type") not in ("connected", "heartbeat") or not isinstance(at, int | float):
            continue
        notes.append(LivenessNote(str(raw["type"]), float(at), str(raw.get("worker", "")),
                                  str(raw.get("attempt", ""))))
    return notes
