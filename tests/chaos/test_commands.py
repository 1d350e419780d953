"""`atmostonce chaos` as a command: bad input exits 2 with one line and starts nothing, and a run
stopped with Ctrl-C (SIGINT) leaves no process and no temporary file behind, and what it says
on stderr about the faults counts them as its summary does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from atmostonce.engines.adapter import Engine, EngineSetup
from atmostonce.engines.reference import engine
from atmostonce.spec.protocol import ExecutorConfig
from tests.chaos.conftest import ROOT, chaos
from tests.load import patience
from tests.runtime.conftest import gone, interruptible


@pytest.mark.parametrize(("args", "says"), [
    (["--duration", "0"], "expected a positive number"),
    (["--duration", "soon"], "expected a number"),
    (["--workers", "0"], "--workers must be between 1 and 16"),
    (["--nemesis", "kill,flood"], "unknown nemesis 'flood'"),
    (["--pace", "-1"], "expected a positive number"),
    (["--min-faults", "-1"], "--min-faults must be between 0 and 100"),
    (["--min-faults", "two"], "expected a whole number"),
    (["--engine", "not a path"], "malformed engine path"),
    (["--engine", "no_such_module:engine"], "cannot import engine module"),
    (["--engine", "atmostonce.engines.reference:nothing"], "has no attribute 'nothing'"),
    (["--engine", "tests.chaos.engines:not_an_engine"], "is no atmostonce.engines.adapter.Engine"),
    (["--executor", "atmostonce.executor.mutants:nope"], "has no attribute 'nope'"),
])
def test_bad_input_exits_2_with_one_line(args: list[str], says: str) -> None:
    done = chaos("--duration", "1", *args) if args[0] != "--duration" else chaos(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("atmostonce: error: ")
    assert says in done.stderr
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_a_workdir_with_files_in_it_is_refused(tmp_path: Path) -> None:
    (tmp_path / "journal.db").write_text("left over")
    done = chaos("--duration", "1", "--workdir", str(tmp_path))
    assert done.returncode == 2
    assert "must be an empty directory" in done.stderr


def test_ctrl_c_stops_the_run_and_cleans_up_every_process_and_file(tmp_path: Path) -> None:
    run = subprocess.Popen([sys.executable, "-m", "atmostonce", "chaos", "--duration", "60"],
                           cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp_path)}, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           preexec_fn=interruptible)
    assert run.stderr is not None
    started = run.stderr.readline()
    found = re.search(r"; pids ([\d ]+)$", started.strip())
    assert found, started
    pids = [int(p) for p in found.group(1).split()]
    assert len(pids) == 5
    assert any(tmp_path.iterdir())
    time.sleep(2.0)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=30 * patience())
    assert run.returncode == 130, err
    assert "interrupted" in err
    pids += [int(p) for p in re.findall(r"pid (\d+)\)", err)]
    assert all(gone(pid) for pid in pids)
    assert list(tmp_path.iterdir()) == []


def test_the_reference_adapter_is_an_engine(tmp_path: Path) -> None:
    setup = EngineSetup(tmp_path, "127.0.0.1:1", ExecutorConfig(), 1,
                        "atmostonce.executor:reference")
    built = engine(setup)
    assert isinstance(built, Engine)
    built.close()


def test_the_fault_counts_on_stderr_are_the_summarys() -> None:
    done = chaos("--duration", "4", "--workers", "2", "--seed", "4", "--nemesis", "kill,pause")
    assert done.returncode == 0, done.stdout + done.stderr
    said = re.search(r"drain: faults stopped after \S+ \(injected: ([^;]*); seen happen: "
                     r"([^)]*)\)", done.stderr)
    summary = re.search(r"faults injected: ([^;]*); workers that stopped themselves when their "
                        r"lease ran out \(D-12\): (\d+)", done.stdout)
    assert said is not None, done.stderr
    assert summary is not None, done.stdout
    assert said[1] == summary[1] != "none"
    exits = re.search(r"exit (\d+)", said[2])
    assert (int(exits[1]) if exits else 0) <= int(summary[2])
