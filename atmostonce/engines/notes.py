"""An agent process's own notes, one JSON object a line: what an engine that hands nothing out
(LangGraph, DBOS: the process that runs the session runs the tool) keeps nowhere but its server
log needs. Each line is written whole with one `write`, so a SIGKILL leaves every line before it
intact.

- `started` (attempt, key, tool): the process is about to run the call's tool, before anything
  else: the attempt's hand-out;
- `ended` (attempt, ok): the tool's run ended at this process;
- `delivering` (attempt, key, ok, ...): the process is about to make that attempt's result the
  call's record in the engine's durable state (LangGraph's checkpoint file, DBOS's `records`
  event); the server log keeps it only when that state holds it at the end.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


class Notes:
    """The notes file of the agent process `worker`."""

    def __init__(self, path: Path, worker: str) -> None:
        self.worker = worker
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def note(self, kind: str, at: float | None = None, **fields: object) -> None:
        line = json.dumps({"type": kind, "at": time.monotonic() if at is None else at,
                           "worker": self.worker, **fields}, separators=(",", ":"))
        os.write(self._fd, (line + "\n").encode())


def read_notes(path: Path) -> list[dict[str, Any]]:
    """Every whole note in the file; a line cut short by a kill is left out."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    notes = []
    for line in lines:
        try:
            note = json.loads(line)
        except ValueError:
            continue
        if isinstance(note, dict):
            notes.append(note)
    return notes
