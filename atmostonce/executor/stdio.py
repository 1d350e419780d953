"""Any Python executor served over the pipe protocol: `python -m atmostonce.executor.stdio
module:factory` reads the harness's JSON lines on stdin and answers each on stdout
(`docs/executor-protocol.md`), so the suite can check the protocol end to end with executors it
already knows, and `--executor-cmd` runs the same checks as `--executor`.

A `SpecError` the executor raises is its refusal (`"refused"`), any other exception an answer of
its own (`"raised"`): the harness tells the two apart as it does in process. A line the server
cannot read ends it with status 2 and one line on stderr.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import IO

from atmostonce.spec import protocol as p
from atmostonce.spec import protocol_json as wire
from atmostonce.spec.errors import SpecError

Message = dict[str, object]


def load(path: str) -> p.ExecutorFactory:
    """The factory at `module:function`; SpecError, one line, when it cannot be loaded."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise SpecError(f"malformed executor path {path!r}: expected module:factory")
    if "" not in sys.path:
        sys.path.append("")
    try:
        target: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception as error:
        raise SpecError(f"cannot load executor {path!r}: {type(error).__name__}: "
                        f"{' '.join(str(error).split())}") from None
    if not callable(target):
        raise SpecError(f"executor {path!r} is not callable")
    factory: p.ExecutorFactory = target
    return factory


def _raised(error: Exception) -> Message:
    if isinstance(error, SpecError):
        return {"op": "refused", "message": str(error)}
    frames = traceback.extract_tb(error.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return {"op": "raised", "error": type(error).__name__,
            "message": " ".join(str(error).split()), "where": where}


class Server:
    """The instances a harness opened on one factory, and the answer to each request."""

    def __init__(self, factory: p.ExecutorFactory) -> None:
        self.factory = factory
        self.instances: dict[int, p.Executor] = {}
        self.ops: dict[str, Callable[[Message], Message | None]] = {
            "open": self.open, "handle": self.handle, "recover": self.recover,
            "snapshot": self.snapshot, "close": self.close}

    def answer(self, message: Message) -> Message | None:
        """The reply to one request (None for `close`, which has none)."""
        op = self.ops.get(str(message.get("op")))
        if op is None:
            raise SpecError(f"unknown op {message.get('op')!r}")
        try:
            return op(message)
        except wire.WireError as error:
            return {"op": "refused", "message": str(error)}
        except Exception as error:
            return _raised(error)

    def _instance(self, message: Message) -> p.Executor:
        instance = message.get("instance")
        if type(instance) is not int or instance not in self.instances:
            raise SpecError(f"{message.get('op')}: no open instance {instance!r}")
        return self.instances[instance]

    def open(self, message: Message) -> Message:
        instance = message.get("instance")
        if type(instance) is not int or instance in self.instances:
            raise SpecError(f"open: instance {instance!r} is not a new whole number")
        config = wire.decode_config(message.get("config"))
        self.instances[instance] = self.factory(config)
        return {"op": "opened"}

    def handle(self, message: Message) -> Message:
        executor = self._instance(message)
        commands = executor.handle(wire.decode_event(message.get("event")))
        return {"op": "commands", "commands": wire.encode_commands(commands)}

    def recover(self, message: Message) -> Message:
        executor = self._instance(message)
        journal = message.get("journal")
        at = message.get("at")
        if type(journal) is not list:
            raise wire.WireError("recover: journal should be an array")
        commands = executor.recover(journal, wire.decode_seconds(at, "recover.at"))
        return {"op": "commands", "commands": wire.encode_commands(commands)}

    def snapshot(self, message: Message) -> Message:
        session_id = message.get("session_id")
        if type(session_id) is not str:
            raise wire.WireError("snapshot: session_id should be a string")
        snapshot = self._instance(message).snapshot(session_id)
        return {"op": "snapshot", "snapshot": wire.encode_snapshot(snapshot)}

    def close(self, message: Message) -> None:
        instance = message.get("instance")
        if type(instance) is int:
            self.instances.pop(instance, None)


def serve(factory: p.ExecutorFactory, read: IO[bytes], write: IO[bytes]) -> None:
    """Answer the handshake, then every request, until `read` ends; SpecError for a line that
    is not the protocol."""
    first = read.readline()
    if not first:
        return
    hello = _parse(first)
    if hello.get("op") != "hello":
        raise SpecError(f"the first line should be the hello, got {first.strip()[:80]!r}")
    if hello.get("protocol") != wire.PROTOCOL_VERSION:
        _say(write, {"op": "refuse", "reason": f"this server speaks protocol "
                     f"{wire.PROTOCOL_VERSION}, not {hello.get('protocol')!r}"})
        return
    _say(write, {"op": "hello", "protocol": wire.PROTOCOL_VERSION,
                 "executor": "atmostonce.executor.stdio"})
    server = Server(factory)
    for line in read:
        reply = server.answer(_parse(line))
        if reply is not None:
            _say(write, reply)


def _parse(line: bytes) -> Message:
    try:
        message = json.loads(line)
    except ValueError as error:
        raise SpecError(f"a line that is not JSON ({error}): {line.strip()[:80]!r}") from None
    if type(message) is not dict:
        raise SpecError(f"a line that is not a JSON object: {line.strip()[:80]!r}")
    found: Message = message
    return found


def _say(write: IO[bytes], message: Message) -> None:
    write.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    write.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if len(args) != 1:
            raise SpecError("usage: python -m atmostonce.executor.stdio module:factory")
        serve(load(args[0]), sys.stdin.buffer, sys.stdout.buffer)
    except SpecError as error:
        print(f"atmostonce.executor.stdio: error: {error}", file=sys.stderr, flush=True)
        return 2
    except (BrokenPipeError, KeyboardInterrupt):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
