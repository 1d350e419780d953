"""The runtime's subcommands: bad input exits 2 with one line naming the problem, and `register`
adds exactly serve, worker, ledger and demo."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.executor.runtime.commands import register

MODULE = [sys.executable, "-m", "atmostonce.executor.runtime"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MODULE, *args], capture_output=True, text=True, timeout=30,
                          check=False)


def test_register_adds_the_runtime_subcommands() -> None:
    parser = argparse.ArgumentParser(prog="atmostonce")
    subparsers = parser.add_subparsers(dest="command")
    register(subparsers)
    assert set(subparsers.choices) == {"serve", "worker", "ledger", "demo"}
    args = parser.parse_args(["serve", "--journal", "j.db", "--lease", "1",
                              "--heartbeat-timeout", "2", "--fence"])
    assert (args.lease, args.heartbeat_timeout, args.fence) == (1.0, 2.0, True)


@pytest.mark.parametrize(("args", "problem"), [
    (["serve", "--journal", "/no/such/dir/j.db"], "does not exist"),
    (["serve", "--journal", "{tmp}/j.db", "--lease", "10", "--heartbeat-timeout", "5"],
     "lease (10.0) must be shorter"),
    (["serve", "--journal", "{tmp}/j.db", "--port", "99999"], "outside 0-65535"),
    (["serve", "--journal", "{tmp}/j.db", "--run-timeout", "soon"], "expected a number"),
    (["worker", "--server", "nohost", "--ledger", "127.0.0.1:1"], "must look like HOST:PORT"),
    (["worker", "--server", "127.0.0.1:1", "--ledger", "127.0.0.1:1", "--duration",
      "bogus=1"], "unknown tool 'bogus'"),
    (["worker", "--server", "127.0.0.1:1", "--ledger", "127.0.0.1:1", "--slots", "0"],
     "at least one slot"),
    (["ledger", "--db", "{tmp}/l.db", "--port", "x"], "not a whole number"),
    (["serve"], "--journal"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], problem: str) -> None:
    done = run(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("atmostonce: error: ")
    assert done.stderr.count("\n") == 1
    assert problem in done.stderr
    assert "Traceback" not in done.stderr
