"""A Ray cluster's address that nothing answers at is one line within seconds, not Ray's
minutes of retries; an address that answers, or one Ray resolves itself, goes on to Ray."""

from __future__ import annotations

import socket

import pytest

from atmostonce.fanout.ray_tasks import answers
from atmostonce.spec.errors import SpecError


def test_an_address_nothing_listens_at_is_one_line() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(SpecError, match=f"nothing answers at 127.0.0.1:{port}"):
            answers(address, seconds=2.0)


def test_an_address_that_answers_and_one_ray_resolves_go_on() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        answers(f"127.0.0.1:{port}")
        answers(f"ray://127.0.0.1:{port}")
    answers("auto")
