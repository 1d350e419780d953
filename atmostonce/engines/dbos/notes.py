"""An application process's own notes, one JSON object a line: what DBOS keeps nowhere but the
server log needs (`server_log`). Each line is written whole with one `write`, so a SIGKILL
leaves every line before it intact.

- `started` (attempt, key, tool): the workflow is about to run the call's tool, before anything
  else: the attempt's hand-out (DBOS hands nothing out; the process that runs the workflow runs
  the tool);
- `ended` (attempt, ok): the tool's run ended at this process;
- `delivering` (attempt, key, of, ok): the workflow is about to write the call's record, that
  attempt's result, into its `records` event; `server_log` keeps it only when the event holds
  it at the end.
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
