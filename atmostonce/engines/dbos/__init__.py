"""DBOS behind the `Engine` interface: `--engine atmostonce.engines.dbos:VARIANT`, the Tool
Calls page on DBOS (`dbos` on PyPI, system database on SQLite, no server) as an agent team
would build it from the page and DBOS's documentation (`mapping`).

| variant            | the call's tool runs                                                |
| ------------------ | ------------------------------------------------------------------- |
| `steps`            | in a `@DBOS.step`: no retries for a single-attempt call, the call's |
|                    | `max_attempts` for a call with retries                              |
| `tool_in_workflow` | as plain workflow code, as Pydantic AI's DBOS integration runs      |
|                    | custom tool functions                                              |
| `guarded`          | in a `@DBOS.step` through `atmostonce.guard`: the attempt's intent  |
|                    | on disk before the tool starts, so a step run again after a crash  |
|                    | gives back the result or records outcome_unknown                   |

Needs the `dbos` extra (`pip install 'atmostonce[dbos]'`); a scripted model (`app.model_turn`)
stands in for the LLM, so no model service is needed.

`mapping` holds the pure rules (variants, records), `store` the application's own tables,
`app` the workflow and its steps, `worker` the application process, `client` the session API,
`notes` and `server_log` what the run saw, `adapter` the engine.
"""

from __future__ import annotations

from atmostonce.spec.errors import SpecError

try:
    import dbos  # noqa: F401
except ImportError:
    raise SpecError("the DBOS engine needs the 'dbos' extra, which is not installed: "
                    "pip install 'atmostonce[dbos]'") from None

from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.dbos.adapter import DBOSEngine, engine_of


def steps(setup: EngineSetup) -> DBOSEngine:
    """Each tool call a `@DBOS.step`, one workflow per session."""
    return engine_of("steps", setup)


def tool_in_workflow(setup: EngineSetup) -> DBOSEngine:
    """Each tool call plain workflow code, one workflow per session: the way Pydantic AI's
    DBOS integration runs custom tool functions, which it does not wrap in steps."""
    return engine_of("tool_in_workflow", setup)


def guarded(setup: EngineSetup) -> DBOSEngine:
    """Each tool call a `@DBOS.step` that runs the tool through `atmostonce.guard`."""
    return engine_of("guarded", setup)


__all__ = ["guarded", "steps", "tool_in_workflow"]
