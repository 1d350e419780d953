"""verify's conformance layer refuses an executor that takes the bad input its schedules never
give: an ask with an ambiguous id (D-2), an answer to a call that does not exist (D-7) and a
user message to a session nobody opened (TC-RCN-TELL)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from atmostonce import verify
from atmostonce.check.probes.bad_input import probe
from atmostonce.executor import reference
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import (
    Answer,
    Ask,
    Command,
    Event,
    ExecutorConfig,
    Reply,
    UserMessage,
)
from atmostonce.verify import check_conformance


def fixed(part: object) -> str:
    return str(part).replace("/", "-").replace(" ", "-") or "empty"


class Lax:
    """The reference executor behind a front that fixes up what it should refuse."""

    def __init__(self, config: ExecutorConfig, ids: bool = False, answers: bool = False):
        self.inner = reference(config)
        self.ids = ids
        self.answers = answers

    def handle(self, event: Event) -> list[Command]:
        if self.ids and isinstance(event, Ask):
            event = replace(event, session_id=fixed(event.session_id),
                            turn_id=fixed(event.turn_id), tool_call_id=fixed(event.tool_call_id))
        if self.answers and isinstance(event, Answer):
            commands = self.inner.handle(event)
            return [replace(c, ok=True) if isinstance(c, Reply) else c for c in commands]
        return self.inner.handle(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_reference_executor_refuses_every_bad_input() -> None:
    assert probe(reference, ExecutorConfig()) == []


@pytest.mark.clause("D-2")
def test_an_executor_that_takes_an_ambiguous_id_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "CONFORMANCE_DEPTH", 3)
    problems = probe(lambda config: Lax(config, ids=True), ExecutorConfig())
    assert [p[:4] for p in problems] == ["D-2:"] * 4
    assert "every id=" in problems[3]
    assert "session_id=''" in problems[0]
    result = check_conformance("lax", lambda config: Lax(config, ids=True))
    assert not result.ok
    assert result.details[0].startswith("took bad input: D-2: an ask with session_id=''")
    assert "TOOK BAD INPUT" in result.summary


@pytest.mark.clause("D-7")
def test_an_executor_that_accepts_an_answer_to_no_call_is_caught() -> None:
    problems = probe(lambda config: Lax(config, answers=True), ExecutorConfig())
    assert problems == ["D-7: an answer to a key no call has was accepted"]


class TakesEveryMessage(Lax):
    """Takes a user message to a session nobody opened, as if it had opened one."""

    def handle(self, event: Event) -> list[Command]:
        if isinstance(event, UserMessage) and not any(
                True for _ in self.inner.snapshot(event.session_id).messages):
            commands = self.inner.handle(event)
            return [replace(c, ok=True) if isinstance(c, Reply) else c for c in commands]
        return self.inner.handle(event)


@pytest.mark.clause("TC-RCN-TELL")
def test_an_executor_that_takes_a_message_to_no_session_is_caught() -> None:
    problems = probe(TakesEveryMessage, ExecutorConfig())
    assert problems == ["TC-RCN-TELL: a user message to a session nobody opened was accepted"]


class Crashes(Lax):
    def handle(self, event: Event) -> list[Command]:
        if isinstance(event, Ask) and "/" in str(event.session_id):
            raise RuntimeError("no idea what to do")
        return self.inner.handle(event)


def test_an_executor_that_fails_on_bad_input_otherwise_than_refusing_it_is_caught() -> None:
    problems = probe(Crashes, ExecutorConfig())
    assert problems == ["the executor failed on a bad-input probe: RuntimeError: no idea what "
                        "to do"]


@pytest.mark.clause("D-12")
def test_an_executor_that_takes_a_lease_outlasting_the_heartbeat_timeout_is_caught() -> None:
    def lax_lease(config: ExecutorConfig) -> Any:
        lease, beat = config.lease, config.heartbeat_timeout
        if type(lease) is float and type(beat) is float and lease in (beat, 2 * beat):
            config = replace(config, lease=beat / 2)
        return reference(config)

    problems = probe(lax_lease, ExecutorConfig())
    assert problems == [
        "the executor took the options lease=10.0 with heartbeat_timeout=10.0, outside "
        "ExecutorConfig's range, instead of refusing them with a SpecError",
        "the executor took the options lease=20.0 with heartbeat_timeout=10.0, outside "
        "ExecutorConfig's range, instead of refusing them with a SpecError"]


def test_an_executor_that_takes_options_of_the_wrong_kind_or_refuses_the_edge_is_caught(
        ) -> None:
    def lax_types(config: ExecutorConfig) -> Any:
        if config.max_attempts is True or config.max_attempts == 2.5:
            config = replace(config, max_attempts=1)
        return reference(config)

    assert [p.split(",")[0] for p in probe(lax_types, ExecutorConfig())] == [
        "the executor took the options max_attempts=True", "the executor took the options "
        "max_attempts=2.5"]

    def strict(config: ExecutorConfig) -> Any:
        if config.max_attempts < 2 or config.retry_backoff <= 0:
            raise SpecError("too strict")
        return reference(config)

    refused = [p for p in probe(strict, ExecutorConfig()) if "inside" in p]
    assert [p.split(",")[0] for p in refused] == [
        "the executor refused the options max_attempts=1", "the executor refused the options "
        "retry_backoff=0"]
