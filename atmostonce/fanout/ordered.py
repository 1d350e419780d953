"""Results that finish in any order, handed on in the order of their inputs: a campaign adds
its seeds in seed order whatever way ran them, so its sums and lists come out as serial."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import TypeVar

R = TypeVar("R")


def in_order(finished: Iterable[tuple[int, R]], count: int,
             heard: Callable[[int, R], None] | None = None) -> Generator[R, None, None]:
    """The results of inputs 0 to `count - 1`, in that order, from `finished`'s (index, result)
    pairs in the order they finished; `heard` is told of each as it finishes (for progress).
    A missing, repeated or out-of-range index is an error, never a silently short result."""
    waiting: dict[int, R] = {}
    following = 0
    for index, result in finished:
        if not 0 <= index < count or index < following or index in waiting:
            raise ValueError(f"result {index} is out of range or came twice ({count} inputs)")
        if heard is not None:
            heard(index, result)
        waiting[index] = result
        while following in waiting:
            yield waiting.pop(following)
            following += 1
    if following != count:
        raise ValueError(f"{count - following} of {count} results never came")
