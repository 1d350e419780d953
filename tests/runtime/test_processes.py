"""Process control: every process a cluster started is gone after it closes, also after an
exception, Ctrl-C, or the death of the process that started it; a process that fails before it
is ready raises its own one-line error."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from atmostonce.runtime.processes import Cluster
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig
from tests.load import patience
from tests.runtime.conftest import CONFIG, eventually, gone, interruptible


def test_close_stops_every_process_even_after_an_exception() -> None:
    pids: list[int] = []
    workdir: list[Path] = []

    def fail_inside() -> None:
        with Cluster(config=CONFIG, workers=2) as cluster:
            workdir.append(cluster.workdir)
            pids.extend(p.pid for p in cluster.started)
            cluster.pause(cluster.workers[0])
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_inside()
    assert len(pids) == 4
    assert all(gone(pid) for pid in pids)
    assert not workdir[0].exists()


def test_a_process_that_fails_before_it_is_ready_raises_its_error(tmp_path: Path) -> None:
    bad = ExecutorConfig(heartbeat_timeout=5.0, lease=10.0)
    cluster = Cluster(tmp_path, config=bad, workers=1)
    with pytest.raises(SpecError, match=r"serve process exited with status 2.*lease"):
        cluster.start()
    assert all(not p.alive for p in cluster.started)


OWNER = textwrap.dedent("""
    import sys, time
    from atmostonce.spec.protocol import ExecutorConfig
    from atmostonce.runtime.processes import Cluster
    cluster = Cluster(sys.argv[1], config=ExecutorConfig(heartbeat_timeout=2.0, lease=1.0),
                      workers=1)
    with cluster:
        print(" ".join(str(p.pid) for p in cluster.started), flush=True)
        time.sleep(60)
""")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL])
def test_nothing_outlives_an_interrupted_or_killed_owner(tmp_path: Path, signum: int) -> None:
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             preexec_fn=interruptible)
    try:
        assert owner.stdout is not None
        pids = [int(pid) for pid in owner.stdout.readline().split()]
        assert len(pids) == 3
        owner.send_signal(signum)
        owner.wait(timeout=10 * patience())
        eventually("the children are gone", lambda: all(gone(pid) for pid in pids), 10)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_a_stopped_worker_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    with Cluster(tmp_path, config=CONFIG, workers=1) as cluster:
        worker = cluster.workers[0]
        started = time.monotonic()
        assert worker.stop() == 0
        assert time.monotonic() - started < 2.0 * patience()
        assert cluster.server is not None
        assert cluster.server.stop() == 0
