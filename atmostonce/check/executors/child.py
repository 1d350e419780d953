"""One executor child process on the far side of the pipe protocol: started from a command line,
greeted with the handshake, then asked one JSON line at a time with a bounded wait for each
answer (`docs/executor-protocol.md`).

Whatever goes wrong with the child (it exits, stays silent past the timeout, writes a line that
is not the protocol's, answers out of turn) is a `ChildFailed` naming the request, what happened
and the file its stderr is copied to; the child is killed and never asked again. Only a
command that cannot be started at all is bad input (SpecError).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol_json import PROTOCOL_VERSION

_GUARDED = ("handle(", "recover(", "snapshot(")
"""Requests whose failure the guard already quotes with the call (`Guarded`)."""
SHOWN = 200
"""Characters of a request or a bad line a failure quotes."""
What = str | Callable[[], str]
"""A request as failures name it, or what writes that name (only a failure needs it)."""


def named(what: What) -> str:
    """The name of a request."""
    return what if isinstance(what, str) else what()


def _last_line(path: Path) -> str:
    """The last non-empty line of a kept stderr, cut to SHOWN characters: usually the reason."""
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    said = next((line for line in reversed(lines) if line), "")
    return said[:SHOWN]


class ChildFailed(Exception):
    """The executor child broke the pipe protocol, exited or hung; the message says which,
    after which request, and where its stderr is kept."""


def split(command: str) -> list[str]:
    """The argument vector of a command line (shell quoting, no shell); SpecError when it is
    empty or its quotes do not close."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise SpecError(f"--executor-cmd {command!r}: {error}") from None
    if not argv:
        raise SpecError("--executor-cmd is empty: give the command that runs your executor")
    return argv


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else f"{text[:SHOWN - 3]}..."


class Child:
    """A running executor child: `ask` sends one request line and returns the reply object."""

    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        self.argv = list(argv)
        self.timeout = timeout
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child)
        try:
            self.process = subprocess.Popen(self.argv, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=self._stderr,
                                            bufsize=0)
        except OSError as error:
            self._stderr.close()
            raise SpecError(f"--executor-cmd {shlex.join(self.argv)!r} cannot be started: "
                            f"{error.strerror or error}") from None
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._in = self.process.stdin.fileno()
        self._out = self.process.stdout.fileno()
        self._buffer = b""
        self.failed: str | None = None
        self.pending = b""
        """Lines without a reply (closes) sent before the next request."""

    def hello(self) -> dict[str, object]:
        """The handshake: the protocol version we speak; the child's answer, or ChildFailed
        for a refusal or another version."""
        reply = self.ask({"op": "hello", "protocol": PROTOCOL_VERSION}, "hello")
        if reply.get("op") == "refuse":
            self._fail(f"refused the handshake: {_cut(str(reply.get('reason', '')))}")
        if reply.get("op") != "hello" or reply.get("protocol") != PROTOCOL_VERSION:
            self._fail(f"answered the hello (protocol {PROTOCOL_VERSION}) with "
                       f"{_cut(json.dumps(reply))}")
        return reply

    def alive(self) -> bool:
        return self.failed is None and self.process.poll() is None

    def send(self, line: bytes) -> None:
        """Queue a line that has no reply; it goes out with the next request."""
        self.pending += line

    def ask(self, message: dict[str, object], what: What) -> dict[str, object]:
        """Send `message` (`what` names it in failures) and wait for its one reply line."""
        return self.parse(self.ask_line(message, what))

    def ask_line(self, message: dict[str, object], what: What) -> bytes:
        """Send `message` and return its reply line as it came, unread (`parse` reads it)."""
        if self.failed is not None:
            raise ChildFailed(self.failed)
        self._what = what
        data = self.pending + json.dumps(message, separators=(",", ":")).encode() + b"\n"
        self.pending = b""
        try:
            while data:
                data = data[os.write(self._in, data):]
        except OSError:
            self._fail("closed its input (it exited)")
        return self._line()

    def parse(self, line: bytes) -> dict[str, object]:
        """The reply object of a line `ask_line` returned; ChildFailed when it is not one."""
        try:
            reply = json.loads(line)
        except ValueError:
            self._fail(f"wrote a line that is not JSON: {_cut(line.decode(errors='replace'))!r}")
        if type(reply) is not dict:
            self._fail(f"wrote a line that is not a JSON object: {_cut(line.decode())!r}")
        found: dict[str, object] = reply
        return found

    def _line(self) -> bytes:
        deadline = time.monotonic() + self.timeout
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1:]
                return line
            left = deadline - time.monotonic()
            ready = select.select([self._out], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self._fail(f"gave no reply within {self.timeout:g} s (the timeout per reply)")
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                self.process.wait(timeout=5)
                self._fail(f"exited with status {self.process.returncode}")
            self._buffer += chunk

    def fail(self, problem: str) -> None:
        """The child broke the protocol in a way only its caller sees: kill it, ChildFailed."""
        self._fail(problem)

    def _fail(self, problem: str) -> None:
        what = named(self._what)
        after = "" if what.startswith(_GUARDED) else f", after {what}"
        self._stop(kill=True)
        kept = self._keep_stderr()
        said = _last_line(kept)
        self.failed = (f"the executor child ({shlex.join(self.argv)}) {problem}{after}"
                       f"{f' (its last words: {said})' if said else ''}; "
                       f"its stderr is kept in {kept}")
        raise ChildFailed(self.failed)

    def _stop(self, kill: bool) -> None:
        process = self.process
        if process.poll() is None:
            if kill:
                process.kill()
            else:
                assert process.stdin is not None
                with contextlib.suppress(OSError):
                    process.stdin.close()
                try:
                    process.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _keep_stderr(self) -> Path:
        """A named file with what the child wrote to stderr (until then an unnamed one, so a
        harness killed midway leaves nothing behind)."""
        handle, name = tempfile.mkstemp(prefix="atmostonce-executor-", suffix=".stderr")
        with os.fdopen(handle, "wb") as kept:
            self._stderr.seek(0)
            kept.write(self._stderr.read())
        self._stderr.close()
        return Path(name)

    def close(self) -> None:
        """End the child by closing its input (killed after 2 s)."""
        if self.failed is None:
            self._stop(kill=False)
            self._stderr.close()

    _what: What = "starting"
