"""LangGraph behind the `Engine` interface: `--engine atmostonce.engines.langgraph:VARIANT`,
the Tool Calls page on LangGraph (and LangChain's `create_agent`, built on it) as an agent team
would build it from the page and the LangGraph and LangChain documentation (`mapping`).

| variant             | graph                                             | durability |
| ------------------- | ------------------------------------------------- | ---------- |
| `create_agent`      | `create_agent` + `HumanInTheLoopMiddleware`        | "async"    |
| `create_agent_sync` | the same                                          | "sync"     |
| `tool_node`         | `StateGraph` + `ToolNode`, `interrupt()` approvals | "async"    |
| `tool_node_sync`    | the same                                          | "sync"     |
| `guarded`           | `create_agent` + the guard (`atmostonce.guard`)    | "async"    |

"async" is LangGraph's default durability. Needs the `langgraph` extra (`pip install
'atmostonce[langgraph]'`): LangGraph, its SQLite checkpointer and LangChain, all from PyPI; a
scripted chat model (`model`) stands in for the LLM, so no model service is needed.

`mapping` holds the pure rules (variants, tool results, records), `store` the application's own
tables, `model` the scripted chat model, `tools` the seam (the tool functions and approval step
a variant picks), `kits` the kits by name, `guarded` the guarded variant's kit and session API,
`graphs` the graphs, `checkpoints` the checkpoint file, `worker` the agent process, `client`
the session API, `notes` and `server_log` what the run saw, `adapter` the engine.
"""

from __future__ import annotations

from atmostonce.spec.errors import SpecError

try:
    import langchain  # noqa: F401
    import langgraph.checkpoint.sqlite  # noqa: F401
except ImportError:
    raise SpecError("the LangGraph engine needs the 'langgraph' extra, which is not installed: "
                    "pip install 'atmostonce[langgraph]'") from None

from atmostonce.engines.adapter import EngineSetup
from atmostonce.engines.langgraph.adapter import LangGraphEngine, engine_of


def create_agent(setup: EngineSetup) -> LangGraphEngine:
    """LangChain's `create_agent` with `HumanInTheLoopMiddleware`, durability "async"."""
    return engine_of("create_agent", setup)


def create_agent_sync(setup: EngineSetup) -> LangGraphEngine:
    """LangChain's `create_agent` with `HumanInTheLoopMiddleware`, durability "sync"."""
    return engine_of("create_agent_sync", setup)


def tool_node(setup: EngineSetup) -> LangGraphEngine:
    """A hand-built `StateGraph` with `ToolNode` and `interrupt()` approvals, durability
    "async"."""
    return engine_of("tool_node", setup)


def tool_node_sync(setup: EngineSetup) -> LangGraphEngine:
    """A hand-built `StateGraph` with `ToolNode` and `interrupt()` approvals, durability
    "sync"."""
    return engine_of("tool_node_sync", setup)


def guarded(setup: EngineSetup) -> LangGraphEngine:
    """LangChain's `create_agent` with the guard's middleware (`atmostonce.guard.langgraph`):
    the page's semantics kept in the guard's journal, durability "async"."""
    return engine_of("guarded", setup)


__all__ = ["create_agent", "create_agent_sync", "guarded", "tool_node", "tool_node_sync"]
