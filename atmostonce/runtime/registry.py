"""Tool registries a runtime worker runs: your own tool functions, each with its `ToolPolicy`,
named by `module:attribute` (`atmostonce worker --tools`); the demo tools are one such registry
(`tools.demo_registry`).

A tool function is an async callable that gets a `ToolCall`: the call's idempotency key (pass
it to the service the tool writes to: TC-KEY-1, TC-KEY-PASS), its JSON arguments as a dict, an
event set when the executor asks to cancel (cooperative: the tool may go on, TC-AMO-3) and
`write`, the effect ledger's write with the key and the worker's lease (D-12). What it returns
is the tool's result: a string as it is, anything else as JSON. Raising `ToolFailed` reports a
failure the model reads (D-3); any other exception is reported the same way, with its type.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from atmostonce.check.executors.loading import search_current_directory
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import ToolPolicy


@dataclass(frozen=True)
class WriteResult:
    """What the service answered: whether it applied the write, and how many writes with this
    key it now holds."""

    applied: bool
    count: int


class Fenced(Exception):
    """The worker's lease ran out: the service refused the write (D-12)."""


class ToolFailed(Exception):
    """A tool's reported failure; its message is what the model reads (D-3)."""


class ToolContext(Protocol):
    """What a running tool gets from its worker."""

    key: str
    cancelled: asyncio.Event

    async def write(self, payload: str) -> WriteResult:
        """Write to the tool's service with the call's idempotency key."""
        ...


@dataclass(frozen=True)
class ToolCall:
    """One run of a tool, as its function sees it."""

    tool: str
    key: str
    arguments: dict[str, Any]
    context: ToolContext

    @property
    def cancelled(self) -> asyncio.Event:
        return self.context.cancelled

    async def write(self, payload: str) -> WriteResult:
        """The effect ledger's write for this call, with its key and the worker's lease."""
        return await self.context.write(payload)


ToolFunction = Callable[[ToolCall], Awaitable[object]]


@dataclass(frozen=True)
class Tool:
    """A tool a worker runs: its name, its policy (None: unclassified) and its function."""

    name: str
    policy: ToolPolicy | None
    run: ToolFunction
    summary: str = ""


Registry = Mapping[str, Tool]


def registry_of(tools: Iterable[object], where: str = "the registry") -> dict[str, Tool]:
    """The tools by name; SpecError for an item that is no `Tool` or a name given twice."""
    table: dict[str, Tool] = {}
    for tool in tools:
        if not isinstance(tool, Tool):
            raise SpecError(f"{where} holds {tool!r}, which is no atmostonce.runtime.registry.Tool")
        if not tool.name or any(c.isspace() for c in tool.name):
            raise SpecError(f"{where}: tool name {tool.name!r} must be non-empty, without white "
                            "space")
        if tool.name in table:
            raise SpecError(f"{where} names tool {tool.name!r} twice")
        if not callable(tool.run):
            raise SpecError(f"{where}: tool {tool.name!r} has no function to run")
        table[tool.name] = tool
    if not table:
        raise SpecError(f"{where} holds no tool")
    return table


def load_registry(path: str) -> dict[str, Tool]:
    """The registry `module:attribute` names: a mapping or an iterable of `Tool`, or a function
    without arguments that returns one. SpecError, one line, for anything else."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise SpecError(f"--tools {path!r}: give it as MODULE:ATTRIBUTE, such as "
                        "examples.my_tools:TOOLS")
    search_current_directory()
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # an import error in the user's module is their bad input
        raise SpecError(f"--tools {path!r}: cannot import {module_name}: "
                        f"{type(error).__name__}: {error}") from None
    found = getattr(module, attribute, None)
    if found is None:
        raise SpecError(f"--tools {path!r}: {module_name} has no {attribute}")
    if callable(found) and not isinstance(found, Mapping):
        if any(p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in inspect.signature(found).parameters.values()):
            raise SpecError(f"--tools {path!r} is a function that takes arguments (a tool?); "
                            "give a mapping or list of Tool, or a function without arguments "
                            "that returns one")
        try:
            found = found()
        except Exception as error:
            raise SpecError(f"--tools {path!r} raised {type(error).__name__}: {error}"
                            ) from None
    items = found.values() if isinstance(found, Mapping) else found
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise SpecError(f"--tools {path!r} is {type(found).__name__}, not a mapping or a list "
                        "of Tool")
    return registry_of(items, f"--tools {path!r}")


async def run_call(registry: Registry, name: str, arguments: str, context: ToolContext
                   ) -> tuple[bool, str]:
    """Run one call of a registered tool: (returned, output). A failure the tool reports, or
    an exception it raises, is an answer for the model (D-3); `Fenced` goes to the worker."""
    tool = registry.get(name)
    if tool is None:
        return False, f"this worker has no tool named {name!r}"
    try:
        parsed = json.loads(arguments or "{}")
        if not isinstance(parsed, dict):
            raise SpecError("the arguments must be a JSON object")
    except (ValueError, SpecError) as error:
        return False, f"{name}: bad arguments: {error}"
    try:
        result = await tool.run(ToolCall(name, context.key, parsed, context))
    except ToolFailed as failure:
        return False, str(failure)
    if isinstance(result, str):
        return True, result
    try:
        return True, json.dumps(result, sort_keys=True)
    except (TypeError, ValueError) as error:
        return False, f"{name} returned a result JSON cannot carry: {error}"
