"""An MCP server's `tools/list` answer, read from a JSON file as the server sent it: the whole
JSON-RPC response or just its `result`. Each tool's annotations become framework metadata
(`ToolHints`), which D-11 maps to an effect class; `openWorldHint` and `title` are kept for
the report but say nothing about repeating a call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from atmostonce.arguments import read_text
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import ToolHints

NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
"""Tool names as MCP allows them."""
_HINTS = ("readOnlyHint", "idempotentHint", "destructiveHint", "openWorldHint")


@dataclass(frozen=True, slots=True)
class McpTool:
    name: str
    hints: ToolHints | None
    """None when the tool has no annotations object."""
    open_world: bool | None
    title: str | None


def read(path: Path, shown: str) -> tuple[McpTool, ...]:
    """The tools of the `tools/list` answer in `path`; `shown` is how errors name the file."""
    text = read_text(path, shown)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise SpecError(f"{shown}: not valid JSON: {error}") from None
    return parse(document, shown)


def parse(document: object, shown: str) -> tuple[McpTool, ...]:
    """The tools of a parsed `tools/list` answer."""
    if not isinstance(document, Mapping):
        raise SpecError(f"{shown}: expected a JSON object (a tools/list result), got "
                        f"{type(document).__name__}")
    where = ""
    if "error" in document and "result" not in document:
        raise SpecError(f"{shown}: error: the file holds a JSON-RPC error, not a tools/list "
                        "result")
    if "result" in document:
        document = document["result"]
        where = "result."
        if not isinstance(document, Mapping):
            raise SpecError(f"{shown}: result: expected an object")
    tools = document.get("tools")
    if not isinstance(tools, list):
        raise SpecError(f"{shown}: {where}tools: expected an array of tools, got "
                        f"{_kind(tools)}")
    found: list[McpTool] = []
    names: set[str] = set()
    for index, entry in enumerate(tools):
        tool = _tool(entry, f"{shown}: {where}tools[{index}]")
        if tool.name in names:
            raise SpecError(f"{shown}: {where}tools[{index}].name: tool {tool.name!r} is "
                            "listed twice")
        names.add(tool.name)
        found.append(tool)
    return tuple(found)


def _tool(entry: object, at: str) -> McpTool:
    if not isinstance(entry, Mapping):
        raise SpecError(f"{at}: expected a tool object, got {_kind(entry)}")
    name = entry.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SpecError(f"{at}.name: expected 1-128 letters, digits, '_', '-' or '.', got "
                        f"{name!r}")
    annotations = entry.get("annotations")
    if annotations is None:
        return McpTool(name, None, None, None)
    if not isinstance(annotations, Mapping):
        raise SpecError(f"{at}.annotations: expected an object, got {_kind(annotations)}")
    for hint in _HINTS:
        value = annotations.get(hint)
        if value is not None and not isinstance(value, bool):
            raise SpecError(f"{at}.annotations.{hint}: expected true or false, got "
                            f"{json.dumps(value)}")
    title = annotations.get("title")
    if title is not None and not isinstance(title, str):
        raise SpecError(f"{at}.annotations.title: expected a string, got {json.dumps(title)}")
    open_world = annotations.get("openWorldHint")
    return McpTool(name, ToolHints.from_mcp(annotations), open_world
                   if isinstance(open_world, bool) else None, title)


def _kind(value: object) -> str:
    return "nothing" if value is None else type(value).__name__
