"""The README's library example runs as written against the processes its section before it
starts: the three `atmostonce serve`, `ledger` and `worker` commands of "Running the runtime by
hand", run in a fresh directory, and the Python block of "The library in Python", run there
too. Only the ports change: each listener gets a free one (`--port 0`) instead of 7400 and
7401, so a test never races another process for a fixed port."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from atmostonce.runtime.processes import PARENT_ENV, Managed, stop_all
from tests.load import patience

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SERVER_PORT, LEDGER_PORT = "7400", "7401"


def section(title: str) -> str:
    """The README's text under the `## title` heading, up to the next one."""
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def shell_commands() -> list[list[str]]:
    """The `atmostonce ...` commands of the hand-run block, without `&` and comments."""
    (block,) = blocks(section("Running the runtime by hand"), "sh")
    commands = [shlex.split(line.partition("#")[0].rstrip().removesuffix("&"))
                for line in block.splitlines() if line.startswith("atmostonce ")]
    assert [c[1] for c in commands] == ["serve", "ledger", "worker"], commands
    return commands


def example() -> str:
    (block,) = blocks(section("The library in Python"), "python")
    return block


def _start(argv: list[str], role: str, workdir: Path) -> Managed:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT))
    env[PARENT_ENV] = str(os.getpid())
    log = workdir / f"{role}.log"
    with log.open("ab") as out:
        popen = subprocess.Popen([sys.executable, "-m", "atmostonce", *argv[1:]], cwd=workdir,
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 env=env, start_new_session=True)
    return Managed(role, argv, log, popen)


def _with_ports(argv: list[str], ports: dict[str, str]) -> list[str]:
    """`--port 7400` becomes `--port 0`; an address naming a port becomes the bound one."""
    out = []
    for before, arg in zip(["", *argv], argv, strict=False):
        if before == "--port":
            out.append("0")
        else:
            out.append(re.sub(r":(\d+)$", lambda m: f":{ports[m.group(1)]}", arg))
    return out


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The README's three processes, running in `tmp_path`; the server's bound port."""
    started: list[Managed] = []
    ports: dict[str, str] = {}
    try:
        for argv in shell_commands():
            role = argv[1]
            process = _start(_with_ports(argv, ports), role, tmp_path)
            started.append(process)
            info = process.wait_ready(20.0 * patience())
            if role == "serve":
                ports[SERVER_PORT] = str(info["port"])
            elif role == "ledger":
                ports[LEDGER_PORT] = str(info["port"])
        yield tmp_path, ports[SERVER_PORT]
    finally:
        stop_all(started)


def test_the_readme_library_example_runs_against_the_readme_processes(
        processes: tuple[Path, str]) -> None:
    """The block asks, waits for approval, is approved by the approver token's holder, and
    both calls succeed; its output is what the README says it prints."""
    workdir, port = processes
    code = example()
    assert code.count(SERVER_PORT) == 2
    assert LEDGER_PORT not in code
    run = subprocess.run([sys.executable, "-c", code.replace(SERVER_PORT, port)], cwd=workdir,
                         capture_output=True, text=True, timeout=60 * patience(), check=False,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:4] == ["s-1/turn-1/call-2 ()", "accepted", "call-1 succeeded",
                         "call-2 succeeded"], run.stdout
    results = dict(line.split(" ", 1) for line in lines[4:])
    assert '"status": "shipped"' in results["call-1"], run.stdout
    assert '"refund": "applied"' in results["call-2"], run.stdout


def test_the_port_rewrite_changes_only_the_ports() -> None:
    """Only the listening ports and the addresses' ports differ from the README's commands."""
    for argv in shell_commands():
        rewritten = _with_ports(argv, {SERVER_PORT: "1", LEDGER_PORT: "2"})
        expected = [{"127.0.0.1:7400": "127.0.0.1:1", "127.0.0.1:7401": "127.0.0.1:2"}
                    .get(arg, arg) for arg in argv]
        if "--port" in argv:
            expected[argv.index("--port") + 1] = "0"
        assert rewritten == expected
        assert rewritten != argv


def lockstep_example() -> str:
    (block,) = blocks(section("The lockstep in your own tests"), "python")
    return block


@pytest.mark.parametrize(("executor", "outcome"), [
    ("atmostonce.executor:reference", "1 passed"),
    ("atmostonce.executor.mutants:attempts_capped_at_two", "1 failed"),
])
def test_the_readme_lockstep_example_runs_as_a_test_file(tmp_path: Path, executor: str,
                                                         outcome: str) -> None:
    """The block, saved as a test file and run by pytest, passes the reference executor as
    written, and fails with a program to paste when it names a broken one instead."""
    code = lockstep_example()
    written = "atmostonce.executor:reference"
    assert code.count(written) == 1
    (tmp_path / "test_mine.py").write_text(code.replace(written, executor))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_mine.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300 * patience(), check=False,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert outcome in done.stdout, done.stdout + done.stderr
    if outcome == "1 failed":
        assert "replay('atmostonce.executor.mutants:attempts_capped_at_two', [" in done.stdout
