"""The command line: exit codes scripts can trust and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "atmostonce", *args],
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize("args", [["bogus"], ["verify", "--bad"], ["clauses", "extra"], []])
def test_bad_arguments_exit_2_with_one_line(args: list[str]) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stderr.startswith("atmostonce: error: ")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_help_explains_the_commands_and_exit_codes() -> None:
    done = run("--help")
    assert done.returncode == 0
    assert "verify" in done.stdout
    assert "Exit codes" in done.stdout


@pytest.mark.slow
def test_verify_passes_on_the_reference_and_prints_json() -> None:
    done = run("verify", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "pass"
    assert all(check["ok"] for check in report["checks"])
