"""The runtime layer on an executor that fails inside the real server: the chaos run stops and
names the executor under test, quotes the server log's line about the failure, keeps the run's
files and prints where; verify's runtime layer reports it as a FAIL with exit status 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

from atmostonce.engines.reference.adapter import executor_failure
from atmostonce.runtime.processes import Managed
from tests.chaos.conftest import ROOT, chaos
from tests.check.executors.broken_executors import path
from tests.load import patience
from tests.runtime.conftest import gone

RAISES = path("raises_on_ask")


def _kept(report: dict[str, Any], tmp_path: Path) -> Path:
    """The kept directory a report names, checked to be a fresh one under `tmp_path`."""
    kept = Path(report["kept"])
    assert kept.parent == tmp_path
    assert kept.is_dir()
    return kept


def test_verify_runtime_names_the_executor_quotes_the_log_and_keeps_the_files(
        tmp_path: Path) -> None:
    """verify's runtime layer fails (exit 1, valid JSON) naming the executor's path and the
    server log's line with the exception, and points at the kept log directory, which holds
    that log."""
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "verify", "--executor", RAISES, "--layers",
         "runtime", "--json"], cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True, text=True, timeout=240 * patience(), check=False)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    check = json.loads(done.stdout)["checks"][0]
    assert (check["layer"], check["ok"]) == ("runtime", False)
    first = check["details"][0]
    assert first.startswith(f"the executor under test {RAISES} failed in the server: ")
    assert "the executor failed: handle(Ask(" in first
    assert "raised RuntimeError: cannot take the call" in first
    kept = _kept(check, tmp_path)
    assert f"the run's files (journal, ledger, every process's log) are kept in {kept}" \
        in check["details"]
    failure = check["executor_failures"][0]
    log = Path(failure["log"])
    assert log.parent.parent == kept
    assert failure["line"] in log.read_text()
    assert f"server log {log}" in first


def test_chaos_names_an_executor_that_fails_before_its_server_serves(tmp_path: Path) -> None:
    """An executor whose recovery raises stops the server before it is ready: the run is a
    failure of the executor (exit 1), not a server or worker that did not come up (exit 2),
    its files are kept and every process it started is gone."""
    broken = path("recover_raises")
    done = chaos("--executor", broken, "--duration", "5", "--json",
                 env={"TMPDIR": str(tmp_path)}, timeout=180 * patience())
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    failure = report["executor_failures"][0]
    assert "the executor failed: recover(" in failure["line"]
    assert "KeyError" in failure["line"]
    kept = _kept(report, tmp_path)
    assert f"kept the run's files in {kept}" in done.stderr
    assert f"the executor under test {broken} failed in the server" in done.stderr
    assert all(gone(pid) for pid in report["pids"])


def _server(log: Path, text: str) -> Managed:
    log.write_text(text)
    return Managed("serve", [], log, cast(Any, None))


def test_a_server_log_without_an_executor_failure_names_none(tmp_path: Path) -> None:
    """A server that was killed, or failed for a reason of its own, is no failure of the
    executor."""
    server = _server(tmp_path / "serve.log", "2026-01-01 10:00:00,000 server listening on "
                     "127.0.0.1:1\n2026-01-01 10:00:01,000 server stopping: disk full\n")
    assert executor_failure(server) is None


def test_the_exception_is_read_from_the_traceback_when_the_line_does_not_name_it(
        tmp_path: Path) -> None:
    """When the failure line names only the event, the exception at the end of its
    traceback (the last of a chain) is quoted with it; a later log record is not part of it."""
    server = _server(tmp_path / "serve.log", "\n".join([
        "2026-01-01 10:00:00,000 server the executor failed on Ask(at=1.0)",
        "Traceback (most recent call last):",
        '  File "x.py", line 3, in handle',
        "KeyError: 'a'",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "x.py", line 5, in handle',
        "RuntimeError: cannot take the call",
        "2026-01-01 10:00:00,001 server stopping: the executor failed",
    ]))
    failure = executor_failure(server)
    assert failure is not None
    assert failure.line == "2026-01-01 10:00:00,000 server the executor failed on Ask(at=1.0)"
    assert failure.quoted() == f"{failure.line} (raised RuntimeError: cannot take the call)"
    assert failure.log == tmp_path / "serve.log"
