"""A worker process in every state it can wait in: SIGTERM and SIGINT stop it within a second
(idle, polling, with a run in hand, waiting for a welcome that never comes, retrying a ledger
that is not there); a wrong peer at `--server` or `--ledger` is a one-line error naming what
answered, exit 2; a server that is gone gives one line per retry with back-off and, after
`--give-up-after`, exit 1."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from atmostonce.runtime.processes import Cluster
from atmostonce.runtime.wire import LOOPBACK
from atmostonce.spec.policy import EffectClass, ToolPolicy
from tests.load import patience
from tests.runtime.conftest import CONFIG, eventually

STOPPED_WITHIN = 1.0 * patience()
"""The bound the worker's stop must keep, from the signal to the process gone: a second on an
idle machine, more when other work shares the cores."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(config=CONFIG, workers=0) as started:
        yield started


class Listener:
    """A TCP port on loopback that accepts connections and then either says nothing or sends
    `answer`: a peer that is not an atmostonce process."""

    def __init__(self, answer: bytes = b"") -> None:
        self.sock = socket.create_server((LOOPBACK, 0))
        self.port = int(self.sock.getsockname()[1])
        self.answer = answer
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                self.accepted.append(conn)
                if self.answer:
                    with contextlib.suppress(OSError):
                        conn.sendall(self.answer)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.close()


def free_port() -> int:
    with socket.create_server((LOOPBACK, 0)) as sock:
        return int(sock.getsockname()[1])


class Worker:
    """A worker process started by hand, its stderr in a file."""

    def __init__(self, cluster: Cluster, server: str, ledger: str, *extra: str) -> None:
        self.log = cluster.workdir / f"worker-{time.monotonic_ns()}.err"
        with self.log.open("w") as err:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "atmostonce", "worker", "--server", server, "--ledger",
                 ledger, "--token-file", str(cluster.token_file), *extra],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                start_new_session=True)

    def stderr(self) -> str:
        return self.log.read_text()

    def finish(self) -> tuple[int, str]:
        """Wait for the process to exit by itself: its status and its stderr."""
        try:
            code = self.popen.wait(timeout=30 * patience())
        finally:
            if self.popen.poll() is None:
                self.popen.kill()
                self.popen.wait()
        return code, self.stderr()

    def seconds_to_stop(self, signum: int) -> float:
        began = time.monotonic()
        self.popen.send_signal(signum)
        self.finish()
        return time.monotonic() - began


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_worker_waiting_for_a_welcome_that_never_comes_stops_within_a_second(
        cluster: Cluster, silent: Listener, signum: int) -> None:
    process = Worker(cluster, f"{LOOPBACK}:{silent.port}", cluster.ledger_address)
    eventually("the worker connected to the silent peer", lambda: silent.accepted)
    assert process.seconds_to_stop(signum) < STOPPED_WITHIN
    assert process.popen.returncode == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_worker_retrying_an_absent_ledger_stops_within_a_second(
        cluster: Cluster, signum: int) -> None:
    process = Worker(cluster, cluster.server_address, f"{LOOPBACK}:{free_port()}")
    eventually("the worker says it cannot reach the ledger",
               lambda: "cannot reach the effect ledger" in process.stderr())
    assert process.seconds_to_stop(signum) < STOPPED_WITHIN
    assert process.popen.returncode == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_idle_polling_worker_stops_within_a_second(cluster: Cluster, signum: int) -> None:
    started = cluster.start_worker()
    assert started.alive
    began = time.monotonic()
    started.signal(signum)
    assert started.wait(10 * patience()) == 0
    assert time.monotonic() - began < STOPPED_WITHIN


def test_a_worker_with_a_run_in_hand_stops_it_within_a_second_and_tells_the_ledger(
        cluster: Cluster) -> None:
    started = cluster.start_worker()
    with cluster.client() as client, cluster.ledger_client() as ledger:
        client.set_policy("lookup_order", ToolPolicy(EffectClass.READ))
        key = client.ask("stop-run", "t1", "c1", "lookup_order", {"duration": 60})
        eventually("the run started", lambda: ledger.runs(key))
        began = time.monotonic()
        started.signal(signal.SIGTERM)
        assert started.wait(10 * patience()) == 0
        assert time.monotonic() - began < STOPPED_WITHIN
        run = ledger.runs(key)[0]
        assert run.end == "stopped"
        assert run.output is not None
        assert "told to stop" in run.output


def test_the_server_address_pointing_at_the_ledger_is_a_one_line_error(
        cluster: Cluster) -> None:
    code, err = Worker(cluster, cluster.ledger_address, cluster.ledger_address).finish()
    assert code == 2, err
    assert err == (f"atmostonce: error: {cluster.ledger_address} is the effect ledger, not "
                   "the atmostonce server\n")


def test_the_ledger_address_pointing_at_the_server_is_a_one_line_error(
        cluster: Cluster) -> None:
    code, err = Worker(cluster, cluster.server_address, cluster.server_address).finish()
    assert code == 2, err
    assert err == (f"atmostonce: error: {cluster.server_address} is the atmostonce server, "
                   "not the effect ledger\n")


def test_a_peer_that_speaks_something_else_is_a_one_line_error(cluster: Cluster) -> None:
    http = Listener(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    try:
        code, err = Worker(cluster, f"{LOOPBACK}:{http.port}", cluster.ledger_address).finish()
    finally:
        http.close()
    assert code == 2, err
    assert err == (f"atmostonce: error: {LOOPBACK}:{http.port} answered with a line that is "
                   "not JSON, so it is not the atmostonce server\n")


def test_a_gone_server_gives_one_line_per_retry_with_back_off_then_the_worker_gives_up(
        cluster: Cluster) -> None:
    port = free_port()
    began = time.monotonic()
    code, err = Worker(cluster, f"{LOOPBACK}:{port}", cluster.ledger_address,
                       "--give-up-after", "1.5").finish()
    took = time.monotonic() - began
    assert code == 1, err
    retries = [line for line in err.splitlines() if "trying again in" in line]
    delays = [float(m.group(1)) for line in retries
              if (m := re.search(r"trying again in ([0-9.]+) s", line))]
    assert len(retries) >= 3
    assert all(f"cannot reach the atmostonce server at {LOOPBACK}:{port}" in line
               for line in retries)
    assert delays[:3] == sorted(delays[:3])
    assert delays[1] > delays[0]
    assert re.search(f"gave up: cannot reach the atmostonce server at {LOOPBACK}:{port} for "
                     r"1\.[5-9] s: Connection refused$", err.splitlines()[-1])
    assert 1.5 <= took < 30
    assert "Traceback" not in err
