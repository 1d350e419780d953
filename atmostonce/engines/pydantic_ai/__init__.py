"""Pydantic AI on Temporal behind the `Engine` interface:
`--engine atmostonce.engines.pydantic_ai:defaults` or `:recommended`, the Tool Calls page built
as a team following Pydantic AI's durable-execution guide would build it (`mapping`).

| variant       | tool activities                                                       |
| ------------- | --------------------------------------------------------------------- |
| `defaults`    | Pydantic AI's defaults: 60 s start-to-close, Temporal's default retry   |
|               | policy (unlimited attempts) for every tool                            |
| `recommended` | a per-tool `ActivityConfig` in the tool's metadata, from the call's     |
|               | policy: `maximum_attempts=1` for single-attempt calls, the harness's   |
|               | timeouts and a heartbeat timeout                                      |

and on DBOS (`dbos_app`), with the DBOS engine's processes and session API:

| variant         | tool functions                                                      |
| --------------- | ------------------------------------------------------------------- |
| `dbos_defaults` | as given: `DBOSDurability` wraps model requests, not custom tools,    |
|                 | so they run as workflow code                                        |
| `dbos_steps`    | each tool's body in a `@DBOS.step`, tool calls run one at a time      |

Needs the `pydantic-ai` extra (`pip install 'atmostonce[pydantic-ai]'`): `pydantic-ai-slim`
with its `temporal` extra, and the `temporal` extra's dev server. A scripted `FunctionModel`
stands in for the LLM.

`mapping` holds the pure rules (variants, plans, the script, records), `tools` the agent's tool
functions, `agents` the two agents, `workflows` the session workflow, `worker` the worker
processes, `adapter` the engine (the Temporal adapter with these workers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from atmostonce.spec.errors import SpecError

try:
    import pydantic_ai.durable_exec.temporal  # noqa: F401
    import temporalio  # noqa: F401
except ImportError:
    raise SpecError("the Pydantic AI engine needs the 'pydantic-ai' extra, which is not "
                    "installed: pip install 'atmostonce[pydantic-ai]'") from None

from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.pydantic_ai.adapter import PydanticAIEngine, engine_of

if TYPE_CHECKING:
    from atmostonce.engines.dbos.adapter import DBOSEngine


def defaults(setup: EngineSetup) -> PydanticAIEngine:
    """Pydantic AI's defaults: every tool on the base activity config."""
    return engine_of("defaults", setup)


def recommended(setup: EngineSetup) -> PydanticAIEngine:
    """The per-tool activity config Pydantic AI documents, from each call's policy."""
    return engine_of("recommended", setup)


def dbos_defaults(setup: EngineSetup) -> DBOSEngine:
    """Pydantic AI's DBOS integration as given: tool functions run as workflow code."""
    return _on_dbos("dbos_defaults", setup)


def dbos_steps(setup: EngineSetup) -> DBOSEngine:
    """Pydantic AI's DBOS integration with each tool's body in a `@DBOS.step`."""
    return _on_dbos("dbos_steps", setup)


def _on_dbos(name: str, setup: EngineSetup) -> DBOSEngine:
    try:
        from atmostonce.engines.pydantic_ai.dbos_app import VARIANTS
    except ImportError:
        raise SpecError("Pydantic AI on DBOS needs the 'pydantic-ai' extra with DBOS, which is "
                        "not installed: pip install 'atmostonce[pydantic-ai]'") from None
    from atmostonce.engines.dbos.adapter import DBOSEngine as Engine
    return Engine(setup, VARIANTS[name])


__all__ = ["dbos_defaults", "dbos_steps", "defaults", "recommended"]
