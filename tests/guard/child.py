"""A process that runs one call through the guard, for the tests that kill it:

    python -m tests.guard.child JOURNAL KEY EFFECT EFFECTS MODE [gated]

It asks the guard for the call (`EFFECT` its effect class; no approval unless `gated`, which
leaves the class to decide)
and runs it with a tool that appends its attempt's label to the file `EFFECTS`, the effect the
tests count, and then, with MODE `block`, waits for ever (for the test's SIGKILL) or, with
`return`, returns. It prints the call's tool result as one JSON line when the run ends.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from atmostonce.guard import Attempt, Guard, Statement, Waiting, result_text
from atmostonce.spec.policy import EffectClass, ToolPolicy


async def main(journal: str, key: str, effect: str, effects: str, mode: str,
               gated: bool) -> None:
    guard = Guard(Path(journal))
    approval = None if gated else False
    guard.ask(key, "tool", "{}", Statement(ToolPolicy(EffectClass.parse(effect), approval)))

    async def tool(attempt: Attempt) -> str:
        fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, f"{attempt.label}\n".encode())
        os.fsync(fd)
        os.close(fd)
        if mode == "block":
            await asyncio.Event().wait()
        return f"done by {attempt.label}"

    result = await guard.run(key, tool)
    text = "waiting" if isinstance(result, Waiting) else result_text(result)
    print(json.dumps({"result": text}), flush=True)


if __name__ == "__main__":
    journal, key, effect, effects, mode = sys.argv[1:6]
    asyncio.run(main(journal, key, effect, effects, mode, gated=sys.argv[6:] == ["gated"]))
