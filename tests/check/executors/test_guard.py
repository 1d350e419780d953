"""The guard between a harness and an executor under test: anything the executor raises, and any
answer outside the protocol's types, becomes one `ProtocolBreach` line naming the call and the
problem; answers of the right types pass unchanged, and the compiled fast check agrees with the
precise one on every value."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atmostonce.check.executors import guard, type_problems
from atmostonce.executor import reference
from atmostonce.spec import protocol as p
from atmostonce.spec.protocol import JSON, ExecutorConfig
from atmostonce.spec.session import (
    AgentSnapshot,
    Message,
    MessageRole,
    ToolCallFinished,
    ToolCallStatus,
    ToolCallView,
)

ASK = p.Ask(1.0, "s", "t", "c", "read")
TIMER = p.StartTimer("run_timeout:a", 5.0, p.TimerKind.RUN_TIMEOUT, "s/t/c#1", "s/t/c")
FINISHED = ToolCallFinished("s", "t", "c", ToolCallStatus.SUCCEEDED)
VIEW = ToolCallView("t", "c", "read", ToolCallStatus.RUNNING, "", "s/t/c")
MESSAGE = Message(MessageRole.TOOL, turn_id="t", tool_call_id="c", tool_output="done")


def _wrong(value: object, **fields: object) -> Any:
    """A copy of the dataclass `value` with `fields` set, whatever their types."""
    replace: Any = dataclasses.replace
    return replace(value, **fields)


class _Answers:
    """An executor that answers every call with what the test gave it."""

    def __init__(self, commands: object = (), snapshot: object = None,
                 error: Exception | None = None) -> None:
        self.commands = commands
        self.answer = snapshot
        self.error = error

    def handle(self, event: p.Event) -> Any:
        if self.error is not None:
            raise self.error
        return self.commands

    def recover(self, journal: Sequence[dict[str, JSON]], at: float) -> Any:
        return self.handle(ASK)

    def snapshot(self, session_id: str) -> Any:
        if self.error is not None:
            raise self.error
        return self.answer


def _guarded(executor: _Answers, json_entries: bool = False) -> guard.Guarded:
    factory: Any = lambda config: executor  # noqa: E731
    return guard.build(factory, ExecutorConfig(), json_entries)


def _breach(executor: _Answers, call: str = "handle", json_entries: bool = False) -> str:
    guarded = _guarded(executor, json_entries)
    calls: dict[str, Callable[[], object]] = {
             "handle": lambda: guarded.handle(ASK),
             "recover": lambda: guarded.recover([{"type": "ask"}], 2.0),
             "snapshot": lambda: guarded.snapshot("s")}
    with pytest.raises(guard.ProtocolBreach) as caught:
        calls[call]()
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_an_exception_is_a_breach_naming_the_event_the_type_the_message_and_the_place() -> None:
    """The executor's exception is reported with its type, message and the line that raised
    it, after the event it was handling: enough to find the bug without a traceback."""
    message = _breach(_Answers(error=RuntimeError("lost\nthe table")))
    assert message.startswith("handle(Ask(at=1.0, session_id='s'")
    assert "raised RuntimeError: lost the table (at " in message
    assert "test_guard.py:" in message


def test_an_exception_in_recover_or_snapshot_names_that_call() -> None:
    """Recovery and snapshots are calls of their own; their breach says which."""
    assert _breach(_Answers(error=KeyError("gone")), "recover").startswith(
        "recover(1 journal entries, at=2.0) raised KeyError: 'gone'")
    assert _breach(_Answers(error=ValueError("no")), "snapshot").startswith(
        "snapshot('s') raised ValueError: no")


@pytest.mark.parametrize(("commands", "says"), [
    ((), "returned a tuple (()), not a list of commands"),
    (None, "returned None, not a list of commands"),
    ([TIMER, "persist"], "returned a list whose item 1 is a str ('persist'), not one of the "
     "protocol's commands"),
    ([p.Command()], "item 0 is a Command (Command()), not one of the protocol's commands"),
    ([_wrong(TIMER, delay="5s")],
     "returned a StartTimer (item 0) whose delay is a str ('5s'), not a float"),
    ([_wrong(TIMER, kind="run_timeout")],
     "returned a StartTimer (item 0) whose kind is a str ('run_timeout'), not a TimerKind"),
    ([p.Publish(_wrong(FINISHED, status="succeeded"))],
     "returned a Publish (item 0) whose event.status is a str ('succeeded'), not a "
     "ToolCallStatus"),
    ([_wrong(p.Reply("r1", True), ok=1)],
     "returned a Reply (item 0) whose ok is an int (1), not a bool"),
    ([_wrong(p.Persist({}), entry=["ask"])],
     "returned a Persist (item 0) whose entry is a list (['ask']), not a dict of JSON values"),
])
def test_a_result_outside_the_protocols_types_is_a_breach_that_says_what_is_wrong(
        commands: object, says: str) -> None:
    """A result must be a list of the protocol's own commands, each field of its declared
    type; anything else is named with its type and value."""
    message = _breach(_Answers(commands))
    assert message.startswith("handle(Ask(")
    assert says in message


def test_recover_is_checked_like_handle() -> None:
    """What `recover` returns is carried out like any other commands."""
    assert "returned None, not a list of commands" in _breach(_Answers(None), "recover")


def test_commands_of_the_right_types_pass_unchanged() -> None:
    """A well-typed result is returned as it is, ints standing in for floats included."""
    commands = [TIMER, dataclasses.replace(TIMER, delay=5), p.Persist({"a": [1, {"b": None}]}),
                p.StopTimer("t"), p.GoAhead("w", "a", "k", "t", "{}", 1.0), p.NoWork("w"),
                p.Cancel("w", "a"), p.DropWorker("w"), p.Publish(FINISHED),
                p.Reply("r", True, "ok")]
    assert _guarded(_Answers(commands)).handle(ASK) is commands


def test_subclasses_of_the_declared_field_types_pass() -> None:
    """The fast check tests exact types; a value of a subclass (a str subclass for a str) falls
    through to the precise check, which accepts it."""
    class Name(str):
        pass

    commands = [p.StopTimer(Name("t"))]
    assert _guarded(_Answers(commands)).handle(ASK) is commands


def test_entries_are_checked_to_be_json_all_the_way_down_when_asked() -> None:
    """Conformance checks journal entries deep, as a journal would store them; without the
    option only their being dicts is checked."""
    commands = [_wrong(p.Persist({}), entry={"type": "ask", "keys": ["a", ("b",)]})]
    message = _breach(_Answers(commands), json_entries=True)
    assert "returned a Persist (item 0) whose entry['keys'][1] is a tuple (('b',)), which is " \
           "not JSON" in message
    assert _guarded(_Answers(commands)).handle(ASK) is commands
    assert "has the key an int (1), not a str" in _breach(
        _Answers([_wrong(p.Persist({}), entry={1: "x"})]), json_entries=True)


@pytest.mark.parametrize(("snapshot", "says"), [
    ({"session_id": "s"}, "returned a dict ({'session_id': 's'}), not an AgentSnapshot"),
    (None, "returned None, not an AgentSnapshot"),
    (_wrong(AgentSnapshot("s", (), ()), tool_calls=[VIEW]),
     "returned an AgentSnapshot whose tool_calls is a list"),
    (_wrong(AgentSnapshot("s", (), ()), tool_calls=({"turn_id": "t"},)),
     "returned an AgentSnapshot whose tool_calls[0] is a dict ({'turn_id': 't'}), not a "
     "ToolCallView"),
    (AgentSnapshot("s", (_wrong(VIEW, status="running"),), ()),
     "whose tool_calls[0].status is a str ('running'), not a ToolCallStatus"),
    (AgentSnapshot("s", (VIEW,), (_wrong(MESSAGE, text=None),)),
     "whose messages[0].text is None, not a str"),
])
def test_a_snapshot_of_the_wrong_shape_is_a_breach_that_says_where(snapshot: object,
                                                                   says: str) -> None:
    """A snapshot must be an AgentSnapshot of ToolCallViews and Messages, all fields typed."""
    message = _breach(_Answers(snapshot=snapshot), "snapshot")
    assert message.startswith("snapshot('s') ")
    assert says in message


def test_a_well_typed_snapshot_passes_unchanged() -> None:
    """A snapshot of the protocol's shape is returned as it is."""
    snapshot = AgentSnapshot("s", (VIEW,), (MESSAGE,))
    assert _guarded(_Answers(snapshot=snapshot)).snapshot("s") is snapshot


def test_a_factory_that_raises_or_builds_no_executor_is_a_breach() -> None:
    """A factory that worked when verify loaded it can still fail later (after a restart)."""
    def failing(config: ExecutorConfig) -> p.Executor:
        raise OSError("no more file handles")

    with pytest.raises(guard.ProtocolBreach) as caught:
        guard.build(failing, ExecutorConfig())
    assert "the executor factory, given ExecutorConfig(" in str(caught.value)
    assert "raised OSError: no more file handles" in str(caught.value)
    with pytest.raises(guard.ProtocolBreach) as built:
        guard.build(lambda config: object(), ExecutorConfig())  # type: ignore[arg-type, return-value]
    assert "which has no handle, recover, snapshot" in str(built.value)


def test_the_reference_executor_passes_the_guard() -> None:
    """The reference answers within the protocol, so guarding it changes nothing."""
    guarded = guard.build(reference, ExecutorConfig(), json_entries=True)
    guarded.handle(p.SetPolicy(0.0, "read"))
    guarded.handle(p.OpenSession(0.0, "s"))
    commands = guarded.handle(p.Ask(1.0, "s", "t", "c", "read"))
    assert any(isinstance(c, p.Persist) for c in commands)
    assert guarded.snapshot("s").tool_calls[0].tool == "read"


_SCALARS = st.one_of(st.text(max_size=3), st.integers(), st.floats(allow_nan=False),
                     st.booleans(), st.none(), st.sampled_from(list(p.TimerKind)),
                     st.sampled_from(list(ToolCallStatus)), st.just(FINISHED),
                     st.just(("a",)), st.just({"a": 1}))


@st.composite
def _commands(draw: st.DrawFn) -> list[object]:
    """Protocol commands whose fields hold values of any of a few types, right or wrong."""
    out: list[object] = []
    for cls in draw(st.lists(st.sampled_from(type_problems.COMMANDS), max_size=4)):
        values = [draw(_SCALARS) for _ in dataclasses.fields(cls)]
        out.append(object.__new__(cls))
        for f, value in zip(dataclasses.fields(cls), values, strict=True):
            object.__setattr__(out[-1], f.name, value)
    return out


@given(_commands())
def test_the_compiled_checks_agree_with_the_precise_one(commands: list[object]) -> None:
    """The fast checks compiled from the annotations (the one inside the guarded `handle` and
    the one `recover` uses) hold exactly when the precise check finds nothing; every value
    drawn is of an exact type, so subclasses never set them apart."""
    precise = type_problems.commands_problem(commands) is None
    assert guard._commands_ok(commands) == precise, commands
    handle = guard._guard_handle(lambda event: commands)  # type: ignore[arg-type, return-value]
    try:
        handle(ASK)
    except guard.ProtocolBreach:
        assert not precise, commands
    else:
        assert precise, commands
