"""One entry for every way: a task over inputs, its results in the inputs' order, each
reported to `heard` as it finishes (in any order), for a live progress line."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TypeVar

from atmostonce.fanout.ordered import in_order
from atmostonce.fanout.way import Way

A = TypeVar("A")
R = TypeVar("R")


def fan_out(task: Callable[[A], R], inputs: Sequence[A], way: Way,
            heard: Callable[[int, R], None] | None = None) -> Generator[R, None, None]:
    """`task` of each input, in order, run the way `way` says; serial runs them here, one
    after the other, as a plain loop would."""
    finished: Iterator[tuple[int, R]]
    if way.ray is not None:
        from atmostonce.fanout.ray_tasks import on_ray

        finished = on_ray(task, inputs, way.ray, way.processes)
    elif not way.serial:
        from atmostonce.fanout.pool import on_processes

        finished = on_processes(task, inputs, way.workers)
    else:
        finished = ((index, task(item)) for index, item in enumerate(inputs))
    return in_order(finished, len(inputs), heard)
