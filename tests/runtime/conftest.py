"""Shared pieces of the runtime tests: a cluster of real processes on loopback (one per module,
stopped at the end of it) and small waits, each bounded in time."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from atmostonce.runtime.client import Client
from atmostonce.runtime.processes import Cluster, Managed
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import ToolCallFinished, ToolCallView
from tests.load import patience

T = TypeVar("T")

CONFIG = ExecutorConfig(heartbeat_timeout=2.0, lease=1.0, retry_backoff=0.1,
                        queue_timeout=30.0, run_timeout=60.0)
LIMIT = 15.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(config=CONFIG, workers=2) as started:
        yield started


@pytest.fixture
def stopped() -> Iterator[list[Managed]]:
    """Processes a test started on its own; each is stopped when the test ends."""
    started: list[Managed] = []
    yield started
    for process in started:
        process.stop()


@pytest.fixture
def client(cluster: Cluster) -> Iterator[Client]:
    cluster.respawn_workers()
    with cluster.client() as opened:
        yield opened


def eventually(what: str, probe: Callable[[], T | None], limit: float = LIMIT) -> T:
    """Poll `probe` until it returns something true (not None, False, 0 or empty), within
    `limit` seconds times `patience()`; that value."""
    bound = limit * patience()
    deadline = time.monotonic() + bound
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {bound:.3g} s")
        time.sleep(0.02)


def call_of(client: Client, session: str, call_id: str) -> ToolCallView:
    for call in client.get_agent_snapshot(session).tool_calls:
        if call.tool_call_id == call_id:
            return call
    raise AssertionError(f"{session} lists no call {call_id}")


def finished(client: Client, session: str, call_id: str,
             limit: float = LIMIT) -> ToolCallFinished:
    """The call's tool_call_finished event from the session's AgentEvents stream."""
    limit *= patience()
    for event in client.events(session, past=True, timeout=limit):
        if event.tool_call_id == call_id:
            return event
    raise AssertionError(f"no tool_call_finished for {call_id} within {limit:.3g} s")


def interruptible() -> None:
    """`preexec_fn` for a child a test stops with SIGINT: a test run started as a background
    job of a script ignores SIGINT, and a child inherits that, so Python in it would never turn
    Ctrl-C into KeyboardInterrupt; the child starts with SIGINT at its default instead."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def gone(pid: int) -> bool:
    """Whether the process no longer runs (a zombie waiting for its parent counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
