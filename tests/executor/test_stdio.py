"""`python -m atmostonce.executor.stdio module:factory`, the server that puts any Python
executor on the pipe protocol: it answers the handshake or refuses another version, tells a
refusal (SpecError) from an exception of the executor's own, and ends with one line and status
2 on a line that is not the protocol or a factory it cannot load."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from atmostonce.executor import reference
from atmostonce.executor.stdio import serve
from atmostonce.spec import protocol_json as wire
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import Ask, ExecutorConfig
from tests.check.executors.broken_executors import raises_on_ask

ROOT = Path(__file__).parents[2]
HELLO = {"op": "hello", "protocol": wire.PROTOCOL_VERSION}
OPEN = {"op": "open", "instance": 1, "config": wire.encode_config(ExecutorConfig())}


def _served(lines: list[dict[str, object]], factory: object = reference) -> list[dict[str, object]]:
    out = io.BytesIO()
    given = io.BytesIO(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    serve(factory, given, out)  # type: ignore[arg-type]
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _ask(session: object) -> dict[str, object]:
    return {"op": "handle", "instance": 1,
            "event": wire.encode_event(Ask(1.0, session, "t1", "c1", "tool"))}  # type: ignore[arg-type]


def test_the_handshake_names_the_version() -> None:
    assert _served([HELLO])[0]["protocol"] == wire.PROTOCOL_VERSION


def test_another_version_is_refused() -> None:
    replies = _served([{"op": "hello", "protocol": 99}, OPEN])
    assert len(replies) == 1
    assert replies[0]["op"] == "refuse"
    assert "99" in str(replies[0]["reason"])


def test_a_refusal_and_an_exception_of_the_executors_own_are_told_apart() -> None:
    refused = _served([HELLO, OPEN, _ask("a/b")])[-1]
    assert refused["op"] == "refused"
    raised = _served([HELLO, OPEN, _ask("s1")], raises_on_ask)[-1]
    assert raised["op"] == "raised"
    assert raised["error"] == "RuntimeError"
    assert raised["message"] == "cannot take the call"


def test_options_out_of_range_are_refused_at_open() -> None:
    config = typing.cast(dict[str, object], wire.encode_config(ExecutorConfig()))
    bad = {**OPEN, "config": {**config, "max_attempts": 0}}
    assert _served([HELLO, bad])[-1]["op"] == "refused"


def test_a_closed_instance_is_gone() -> None:
    replies = _served([HELLO, OPEN, {"op": "close", "instance": 1},
                       {"op": "snapshot", "instance": 1, "session_id": "s1"}])
    assert [r["op"] for r in replies] == ["hello", "opened", "refused"]


def test_a_line_that_is_not_the_protocol_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="not JSON"):
        serve(reference, io.BytesIO(b"nonsense\n"), io.BytesIO())
    with pytest.raises(SpecError, match="unknown op 'launch'"):
        _served([HELLO, {"op": "launch"}])


@pytest.mark.parametrize(("argv", "stdin", "says"), [
    (["nosuch:thing"], b"", "cannot load executor 'nosuch:thing'"),
    (["atmostonce.executor"], b"", "malformed executor path"),
    ([], b"", "usage:"),
    (["atmostonce.executor:reference"], b"[1]\n", "not a JSON object"),
])
def test_bad_input_is_one_line_and_status_2(argv: list[str], stdin: bytes, says: str) -> None:
    done = subprocess.run([sys.executable, "-m", "atmostonce.executor.stdio", *argv],
                          input=stdin, capture_output=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1, err
    assert says in err
