"""Results that finish in any order come out in the order of their inputs, each heard as it
finishes; a missing, repeated or unknown result is an error, never a short answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atmostonce.fanout.ordered import in_order


@given(st.permutations(list(range(12))))
def test_any_finishing_order_gives_the_inputs_order(finishing: list[int]) -> None:
    heard: list[int] = []
    out = list(in_order(((i, f"r{i}") for i in finishing), 12,
                        lambda index, _: heard.append(index)))
    assert out == [f"r{i}" for i in range(12)]
    assert heard == finishing


def test_results_are_handed_on_as_soon_as_their_turn_comes() -> None:
    given_so_far: list[int] = []

    def finishing() -> Iterator[tuple[int, int]]:
        for index in (1, 0, 3, 2):
            given_so_far.append(index)
            yield index, index

    out = in_order(finishing(), 4)
    assert next(out) == 0
    assert given_so_far == [1, 0]
    assert next(out) == 1
    assert next(out) == 2
    assert given_so_far == [1, 0, 3, 2]


@pytest.mark.parametrize(("finished", "says"), [
    ([(0, "a"), (0, "a"), (1, "b")], "came twice"),
    ([(1, "b"), (1, "b"), (0, "a")], "came twice"),
    ([(0, "a"), (2, "c")], "out of range"),
    ([(-1, "z")], "out of range"),
    ([(0, "a")], "1 of 2 results never came"),
])
def test_a_wrong_set_of_results_is_an_error(finished: list[tuple[int, str]], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        list(in_order(finished, 2))
