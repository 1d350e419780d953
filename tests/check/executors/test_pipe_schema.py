"""The JSON Schema shipped in the package describes every line that goes over the pipe: it is
the one `atmostonce.spec.protocol_schema` writes from the protocol's dataclasses, and the lines
of a real session (schedules with restarts, refusals) validate against it in both directions,
while lines that break it are caught."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from importlib import resources
from typing import Any

import jsonschema
import pytest

from atmostonce.check.executors import pipe
from atmostonce.check.executors.child import Child, What
from atmostonce.check.lockstep.conformance import replay_schedules
from atmostonce.check.probes import bad_input
from atmostonce.model.check import DEFAULT
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.protocol_schema import schema

SERVED = f"{shlex.quote(sys.executable)} -m atmostonce.executor.stdio atmostonce.executor:reference"
REGENERATE = ("python -c 'import json; from atmostonce.spec.protocol_schema import schema; "
              "print(json.dumps(schema(), indent=2))' "
              "> atmostonce/spec/executor-protocol.schema.json")


def _shipped() -> dict[str, Any]:
    text = resources.files("atmostonce.spec").joinpath(
        "executor-protocol.schema.json").read_text(encoding="utf-8")
    found: dict[str, Any] = json.loads(text)
    return found


def _validator(part: str) -> jsonschema.Draft202012Validator:
    shipped = _shipped()
    return jsonschema.Draft202012Validator({**shipped, "oneOf": [{"$ref": f"#/$defs/{part}"}]})


@pytest.fixture
def transcript(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[dict[str, object],
                                                                       dict[str, object]]]]:
    """Every request the harness sends over the pipe, with its reply."""
    lines: list[tuple[dict[str, object], dict[str, object]]] = []
    ask_line = Child.ask_line

    def recorded(self: Child, message: dict[str, object], what: What) -> bytes:
        line = ask_line(self, message, what)
        lines.append((message, json.loads(line)))
        return line

    monkeypatch.setattr(Child, "ask_line", recorded)
    monkeypatch.setenv(pipe.COMMAND_VARIABLE, "")
    monkeypatch.setenv(pipe.TIMEOUT_VARIABLE, "")
    pipe.use(SERVED, timeout=20.0)
    yield lines
    pipe.close_children()


def test_the_shipped_schema_is_the_one_the_protocol_dataclasses_give() -> None:
    jsonschema.Draft202012Validator.check_schema(_shipped())
    assert _shipped() == json.loads(json.dumps(schema())), f"regenerate it: {REGENERATE}"


def test_every_line_of_a_session_validates_in_both_directions(
        transcript: list[tuple[dict[str, object], dict[str, object]]]) -> None:
    assert replay_schedules(DEFAULT, pipe.from_environment, 5).ok
    requests, replies = _validator("ToExecutor"), _validator("FromExecutor")
    for request, reply in transcript:
        requests.validate(request)
        replies.validate(reply)
    ops = {request["op"] for request, _ in transcript} | {
        f"reply {reply['op']}" for _, reply in transcript}
    assert ops >= {"hello", "open", "handle", "recover", "snapshot", "reply hello",
                   "reply opened", "reply commands", "reply snapshot"}
    kinds = {c["type"] for _, reply in transcript for c in reply.get("commands", [])}  # type: ignore[attr-defined]
    assert kinds >= {"Persist", "GoAhead", "StartTimer", "Publish"}


def test_refusals_validate_as_replies(
        transcript: list[tuple[dict[str, object], dict[str, object]]]) -> None:
    assert bad_input.probe(pipe.from_environment, ExecutorConfig()) == []
    replies = _validator("FromExecutor")
    for _, reply in transcript:
        replies.validate(reply)
    assert any(reply["op"] == "refused" for _, reply in transcript)


@pytest.mark.parametrize(("part", "line"), [
    ("FromExecutor", {"op": "commands", "commands": [
        {"type": "GoAhead", "worker": "w1", "attempt": "a", "key": "k", "tool": "t",
         "arguments": "{}", "lease": "5"}]}),
    ("FromExecutor", {"op": "commands", "commands": [{"type": "LaunchMissiles"}]}),
    ("FromExecutor", {"op": "commands", "commands": [{"type": "NoWork"}]}),
    ("FromExecutor", {"op": "opened", "extra": 1}),
    ("ToExecutor", {"op": "handle", "instance": 1, "event": {"type": "Poll", "at": 0.0}}),
    ("ToExecutor", {"op": "hello", "protocol": 2}),
])
def test_a_line_that_breaks_the_protocol_is_caught(part: str, line: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        _validator(part).validate(line)
