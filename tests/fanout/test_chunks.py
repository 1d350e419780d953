"""Seeds are cut into contiguous chunks that keep their order, differ in size by at most one,
are never empty, and number several per worker, none above the largest size."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from atmostonce.fanout.chunks import MAX_CHUNK, chunks


@given(st.integers(0, 3000), st.integers(1, 16), st.integers(1, 10), st.integers(1, 80))
def test_chunks_cover_every_item_in_order_in_nearly_equal_pieces(
        count: int, workers: int, per_worker: int, largest: int) -> None:
    items = list(range(100, 100 + count))
    pieces = chunks(items, workers, per_worker, largest)
    assert [i for piece in pieces for i in piece] == items
    if not items:
        assert pieces == []
        return
    sizes = [len(piece) for piece in pieces]
    assert min(sizes) >= 1
    assert max(sizes) - min(sizes) <= 1
    assert max(sizes) <= largest or len(pieces) == count
    assert len(pieces) == min(count, max(workers * per_worker, -(-count // largest)))


def test_a_long_campaign_gets_chunks_of_at_most_the_largest_size() -> None:
    pieces = chunks(list(range(2000)), 2)
    assert max(len(p) for p in pieces) == MAX_CHUNK
    assert len(pieces) == 2000 // MAX_CHUNK


def test_a_short_campaign_gives_every_worker_several_chunks() -> None:
    assert len(chunks(list(range(200)), 2)) == 16
    assert chunks([7, 8, 9], 4) == [(7,), (8,), (9,)]
