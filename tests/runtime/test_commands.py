"""The runtime's subcommands: bad input exits 2 with one line naming the problem, and `register`
adds exactly serve, worker, ledger and demo."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.runtime.commands import register
from tests.load import patience

MODULE = [sys.executable, "-m", "atmostonce.runtime"]
WORKER = ["worker", "--server", "127.0.0.1:1", "--ledger", "127.0.0.1:1", "--token-file",
          "{tmp}/token"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MODULE, *args], capture_output=True, text=True, timeout=30 * patience(),
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
    ([*WORKER, "--server", "nohost"], "must look like HOST:PORT"),
    ([*WORKER, "--duration", "bogus=1"], "unknown tool 'bogus'"),
    ([*WORKER, "--slots", "0"], "--slots: expected at least 1"),
    ([*WORKER, "--fail", "bogus"], "--fail: unknown tool 'bogus'"),
    (["ledger", "--db", "{tmp}/l.db", "--keyed", "bogus"], "--keyed: unknown tool 'bogus'"),
    (["ledger", "--db", "{tmp}/l.db", "--port", "x"], "not a whole number"),
    (["serve"], "--journal"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], problem: str) -> None:
    token = tmp_path / "token"
    token.write_text("a-token\n")
    token.chmod(0o600)
    done = run(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("atmostonce: error: ")
    assert done.stderr.count("\n") == 1
    assert problem in done.stderr
    assert "Traceback" not in done.stderr
