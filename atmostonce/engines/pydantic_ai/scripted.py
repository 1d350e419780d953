"""The scripted model of every Pydantic AI variant: a `FunctionModel` function that answers a
turn's user prompt (`mapping.script`) with all the turn's calls in one response and, once their
tool returns are in, with a text that ends the run. It is the only scripted part."""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo

from atmostonce.engines.pydantic_ai import mapping

DONE = "done"
"""The model's text once a turn's tool returns are in."""


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model's response to `messages` (see the module docstring)."""
    last = messages[-1] if messages else None
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                calls = mapping.scripted_calls(part.content)
                if calls is not None:
                    return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id=i)
                                                for i, tool, arguments in calls])
    return ModelResponse(parts=[TextPart(DONE)])
