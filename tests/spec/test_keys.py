"""Idempotency keys: the page's shape, a lossless round trip, and ambiguous parts rejected."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atmostonce.spec.errors import SpecError
from atmostonce.spec.keys import IdempotencyKey, build_key, component_problem, parse_key

components = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp", "Cf", "Co", "Cn"),
                           blacklist_characters="/"),
    min_size=1,
    max_size=12,
)


@pytest.mark.clause("TC-KEY-2")
def test_key_joins_flow_turn_and_call_with_slashes() -> None:
    assert build_key("session-42", "turn-3", "call-7") == "session-42/turn-3/call-7"


@pytest.mark.clause("TC-KEY-2", "TC-RCN-KEY")
@given(components, components, components)
def test_key_round_trips(flow: str, turn: str, call: str) -> None:
    assert parse_key(build_key(flow, turn, call)) == IdempotencyKey(flow, turn, call)


@pytest.mark.clause("D-2")
@given(st.tuples(components, components, components), st.tuples(components, components, components))
def test_different_calls_never_share_a_key(
    a: tuple[str, str, str], b: tuple[str, str, str]
) -> None:
    if a != b:
        assert build_key(*a) != build_key(*b)


@pytest.mark.clause("D-2")
@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        (("", "turn-1", "call-1"), "flow_id '' is empty"),
        (("a/b", "turn-1", "call-1"), "flow_id 'a/b' contains '/'"),
        (("s", "turn 1", "call-1"), "turn_id 'turn 1' contains white space"),
        (("s", "t", "call\n1"), "tool_call_id 'call\\n1' contains white space or an unprintable"),
    ],
)
def test_ambiguous_components_are_rejected(parts: tuple[str, str, str], problem: str) -> None:
    with pytest.raises(SpecError) as raised:
        build_key(*parts)
    assert problem in str(raised.value)


@pytest.mark.clause("D-2", "TC-RCN-KEY")
@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("session-42/turn-3", "expected flow_id/turn_id/tool_call_id, got 2 part(s)"),
        ("a/b/c/d", "got 4 part(s)"),
        ("a//c", "turn_id '' is empty"),
        (42, "idempotency key must be a string, got int"),
    ],
)
def test_malformed_keys_fail_to_parse_with_one_line(key: object, problem: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse_key(key)
    assert problem in str(raised.value)
    assert "\n" not in str(raised.value)


@given(st.text(max_size=8))
def test_component_problem_accepts_exactly_the_unambiguous_components(value: str) -> None:
    ok = value != "" and "/" not in value and " " not in value and value.isprintable()
    assert (component_problem(value) is None) == ok
