"""A campaign's seeds cut into contiguous chunks, one task each: several per worker, so that
a slow chunk does not leave the others idle at the end, and few enough that the cost of
sending a task stays small beside the seeds it runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

CHUNKS_PER_WORKER = 8
MAX_CHUNK = 50
"""The most seeds one chunk holds, so that progress moves often on a long campaign."""


def chunks(items: Sequence[T], workers: int, per_worker: int = CHUNKS_PER_WORKER,
           largest: int = MAX_CHUNK) -> list[tuple[T, ...]]:
    """`items` in order, cut into contiguous chunks of nearly equal size (sizes differ by at
    most one): `per_worker` chunks per worker, none above `largest` items, none empty."""
    if not items:
        return []
    wanted = max(workers * per_worker, -(-len(items) // largest))
    count = min(len(items), wanted)
    size, extra = divmod(len(items), count)
    out: list[tuple[T, ...]] = []
    start = 0
    for index in range(count):
        end = start + size + (index < extra)
        out.append(tuple(items[start:end]))
        start = end
    return out
