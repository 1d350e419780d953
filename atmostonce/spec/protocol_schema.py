"""The JSON Schema of the pipe protocol's lines, written from the same dataclass annotations
`atmostonce.spec.protocol_json` encodes and decodes with, so the schema shipped beside this
module (`executor-protocol.schema.json`) cannot drift from what goes on the wire: a test
compares the two. `#/$defs/ToExecutor` is a line the harness writes, `#/$defs/FromExecutor`
one the executor writes.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing

from atmostonce.spec import protocol as p
from atmostonce.spec import protocol_json as wire
from atmostonce.spec.session import AgentSnapshot

Schema = dict[str, object]

_SCALARS: dict[object, Schema] = {str: {"type": "string"}, float: {"type": "number"},
                                  int: {"type": "integer"}, bool: {"type": "boolean"}}


def _ref(name: str) -> Schema:
    return {"$ref": f"#/$defs/{name}"}


class _Writer:
    def __init__(self) -> None:
        self.defs: dict[str, Schema] = {}

    def value(self, hint: object) -> Schema:
        if hint in _SCALARS:
            return _SCALARS[hint]
        origin = typing.get_origin(hint)
        if origin is dict:
            return {"type": "object"}
        if origin is tuple:
            return {"type": "array", "items": self.value(typing.get_args(hint)[0])}
        if origin is types.UnionType:
            inner = next(a for a in typing.get_args(hint) if a is not type(None))
            return {"anyOf": [self.value(inner), {"type": "null"}]}
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return {"enum": [m.value for m in hint]}
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self.dataclass(hint, tagged=False)
        raise TypeError(f"no schema for {hint!r}")

    def dataclass(self, cls: type, tagged: bool) -> Schema:
        name = cls.__name__
        if name not in self.defs:
            self.defs[name] = {}
            declared = typing.get_type_hints(cls)
            fields = dataclasses.fields(cls)
            properties: dict[str, object] = {"type": {"const": name}} if tagged else {}
            properties.update({f.name: self.value(declared[f.name]) for f in fields})
            required = (["type"] if tagged else []) + [
                f.name for f in fields if f.default is dataclasses.MISSING]
            doc = (cls.__doc__ or "").strip().split("\n\n")[0]
            self.defs[name] = {**({"description": " ".join(doc.split())} if doc else {}),
                               "type": "object", "properties": properties,
                               "required": required, "additionalProperties": False}
        return _ref(name)


def _message(op: str, description: str, **members: Schema) -> Schema:
    return {"description": description, "type": "object",
            "properties": {"op": {"const": op}, **members},
            "required": ["op", *members], "additionalProperties": False}


def schema() -> Schema:
    """The schema of every line of the pipe protocol, version `PROTOCOL_VERSION`."""
    writer = _Writer()
    events = [writer.dataclass(cls, tagged=True) for cls in wire.EVENTS.values()]
    commands = [writer.dataclass(cls, tagged=True) for cls in wire.COMMANDS.values()]
    config = writer.dataclass(p.ExecutorConfig, tagged=False)
    snapshot = writer.dataclass(AgentSnapshot, tagged=False)
    instance: Schema = {"type": "integer", "minimum": 1}
    version: Schema = {"const": wire.PROTOCOL_VERSION}
    text: Schema = {"type": "string"}
    requests = {
        "HelloRequest": _message("hello", "The harness's first line: the protocol version it "
                                 "speaks.", protocol=version),
        "OpenRequest": _message("open", "Build an executor instance with these options.",
                                instance=instance, config=config),
        "HandleRequest": _message("handle", "One event for an instance.", instance=instance,
                                  event=_ref("Event")),
        "RecoverRequest": _message("recover", "Rebuild a fresh instance from the journal its "
                                   "predecessor persisted, in order.", instance=instance,
                                   journal={"type": "array", "items": {"type": "object"}},
                                   at={"type": "number"}),
        "SnapshotRequest": _message("snapshot", "get_agent_snapshot of a session.",
                                    instance=instance, session_id=text),
        "CloseRequest": _message("close", "The harness is done with an instance; no reply.",
                                 instance=instance),
    }
    hello = _message("hello", "The child speaks the version the harness named.",
                     protocol=version)
    hello["properties"] = {**typing.cast(dict[str, object], hello["properties"]),
                           "executor": text}
    replies = {
        "HelloReply": hello,
        "RefuseReply": _message("refuse", "The child does not speak that version.",
                                reason=text),
        "OpenedReply": _message("opened", "The instance is built."),
        "CommandsReply": _message("commands", "Every command the request caused, in order.",
                                  commands={"type": "array", "items": _ref("Command")}),
        "SnapshotReply": _message("snapshot", "The session's snapshot.", snapshot=snapshot),
        "RefusedReply": _message("refused", "The executor refuses the request as bad input "
                                 "(a SpecError in process).", message=text),
        "RaisedReply": _message("raised", "The executor failed otherwise (an exception in "
                                "process).", error=text, message=text),
    }
    raised = typing.cast(dict[str, dict[str, object]], replies["RaisedReply"])
    raised["properties"]["where"] = text
    clash = ({"ToExecutor", "FromExecutor", "Event", "Command"} | set(requests) | set(replies)
             ) & set(writer.defs)
    if clash:
        raise TypeError(f"schema names taken by protocol dataclasses: {sorted(clash)}")
    defs: dict[str, object] = {
        "ToExecutor": {"oneOf": [_ref(name) for name in requests]},
        "FromExecutor": {"oneOf": [_ref(name) for name in replies]},
        "Event": {"oneOf": events},
        "Command": {"oneOf": commands},
        **requests, **replies, **writer.defs,
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://atmostonce.dev/executor-protocol.schema.json",
            "title": f"atmostonce executor pipe protocol, version {wire.PROTOCOL_VERSION}",
            "description": "One JSON object per line: the harness writes a Request, the "
                           "executor child answers each (but close) with one Reply.",
            "oneOf": [_ref("ToExecutor"), _ref("FromExecutor")], "$defs": defs}
