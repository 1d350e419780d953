"""Tasks on worker processes come back with their input's index, each computed in another
process; a task's exception reaches the caller."""

from __future__ import annotations

import os

import pytest

from atmostonce.fanout.pool import on_processes


def square_where(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def refuse(n: int) -> int:
    if n == 3:
        raise ArithmeticError(f"no {n}")
    return n


def test_every_input_comes_back_with_its_index_from_worker_processes() -> None:
    out = dict(on_processes(square_where, list(range(10)), 2))
    assert sorted(out) == list(range(10))
    assert all(out[i][0] == i * i for i in range(10))
    workers = {pid for _, pid in out.values()}
    assert os.getpid() not in workers
    assert 1 <= len(workers) <= 2


def test_an_exception_in_a_task_reaches_the_caller() -> None:
    with pytest.raises(ArithmeticError, match="no 3"):
        list(on_processes(refuse, list(range(6)), 2))
