"""A process that asks the guard for one call, then fails its own disk and runs the call:

    fiu-run -x -f CONTROL python -m tests.guard.disk_child JOURNAL KEY EFFECT EFFECTS FAULT CONTROL

The fault (a `DiskFault` value) is turned on in this very process by `fiu-ctrl` after the ask
is durable, so the next commit, the attempt's intent, meets it. The tool appends its label to
`EFFECTS` without syncing. The process prints one JSON line: the run's result, or the error
the guard raised.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from atmostonce.guard import Attempt, Guard, Statement, Waiting, result_text
from atmostonce.runtime import fiu
from atmostonce.runtime.fiu import DiskFault
from atmostonce.spec.policy import EffectClass, ToolPolicy


async def main(journal: str, key: str, effect: str, effects: str, fault: str,
               control: str) -> None:
    guard = Guard(Path(journal))
    guard.ask(key, "tool", "{}", Statement(ToolPolicy(EffectClass.parse(effect), False)))
    fiu.inject(os.getpid(), Path(control), DiskFault(fault))

    async def tool(attempt: Attempt) -> str:
        fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, f"{attempt.label}\n".encode())
        os.close(fd)
        return f"done by {attempt.label}"

    try:
        result = await guard.run(key, tool)
    except Exception as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}), flush=True)
        return
    text = "waiting" if isinstance(result, Waiting) else result_text(result)
    print(json.dumps({"result": text}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:7]))
