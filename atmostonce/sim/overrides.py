"""Settings given on the command line over a scenario file's: a dotted key (`executor.
heartbeat_timeout`, `faults.worker_crashes_per_hour`, `tools.refund.failure_rate`) and a value
read as TOML reads one, set on the parsed document before it is checked, so a value from the
command line is judged exactly like one in the file."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from atmostonce.spec.errors import SpecError

Override = tuple[str, str]
"""(dotted key, value as typed)."""
CREATED = "\0created by an override"
"""Marks a `[[tools]]` entry an override made: the tool must then come from the MCP list."""


def parse_assignment(text: str, flag: str) -> Override:
    """`NAME=VALUE` as `--set` takes it."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip() or not value.strip():
        raise SpecError(f"{flag} wants NAME=VALUE (NAME a dotted scenario key such as "
                        f"executor.heartbeat_timeout), got {text!r}")
    return name.strip(), value.strip()


def parse_sweep(text: str) -> tuple[str, tuple[str, ...]]:
    """`NAME=V1,V2,...` as `--sweep` takes it: the key and its values, in order, each once."""
    name, equals, values = text.partition("=")
    parts = tuple(v.strip() for v in values.split(","))
    if not equals or not name.strip() or not all(parts):
        raise SpecError("--sweep wants NAME=V1,V2,... (NAME a dotted scenario key such as "
                        f"executor.heartbeat_timeout, no empty value), got {text!r}")
    if len(set(parts)) != len(parts):
        raise SpecError(f"--sweep {text}: a value is given twice")
    return name.strip(), parts


def value(text: str) -> object:
    """`text` as a TOML value (a number, a boolean, a quoted string, an array or inline
    table); anything TOML cannot read is taken as a bare string, for the checks to judge."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply(document: Mapping[str, Any], overrides: Sequence[Override], file: str
          ) -> dict[str, Any]:
    """A copy of `document` with each override set. `tools.NAME.KEY` addresses the `[[tools]]`
    entry called NAME, made when the file has none (a tool of the MCP list)."""
    out: dict[str, Any] = copy.deepcopy(dict(document))
    for name, text in overrides:
        parts = name.split(".")
        if not all(parts):
            raise SpecError(f"{file}: {name}: not a dotted key")
        target: dict[str, Any] = out
        if parts[0] == "tools":
            if len(parts) < 3:
                raise SpecError(f"{file}: {name}: a tool's setting is tools.NAME.KEY")
            target = _tool_entry(out, parts[1], file, name)
            parts = parts[2:]
        for i, part in enumerate(parts[:-1]):
            inner = target.setdefault(part, {})
            if not isinstance(inner, dict):
                raise SpecError(f"{file}: {name}: {'.'.join(parts[:i + 1])} is not a table")
            target = inner
        target[parts[-1]] = value(text)
    return out


def _tool_entry(document: dict[str, Any], tool: str, file: str, name: str) -> dict[str, Any]:
    entries = document.setdefault("tools", [])
    if not isinstance(entries, list):
        raise SpecError(f"{file}: {name}: tools is not an array of tables")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == tool:
            return entry
    entry = {"name": tool, CREATED: True}
    entries.append(entry)
    return entry
