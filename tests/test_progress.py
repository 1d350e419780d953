"""Live progress (`atmostonce.progress`): a long command on a terminal shows rich's live display
on stderr while it runs, a bar with the time left when the total is known and a spinner with
the rate otherwise, and then prints its results as before; off a terminal or with --json it
draws nothing at all."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.load import patience

ROOT = Path(__file__).resolve().parent.parent
SIMULATE = ("simulate", "--seeds", "40")
CHECK = ("check", "--workers", "1", "--faults", "1")
"""A bound without a known state count, explored in about half a second."""
QUIET_SIMULATE = ("simulate", "--seeds", "5")
QUIET_CHECK = ("check", "--workers", "1", "--faults", "1", "--max-states", "3000")
"""Shorter runs for the cases that must draw nothing."""
HIDE_CURSOR = "\x1b[?25l"
"""What rich's live display writes first on a terminal."""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "atmostonce", *args]


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return {**env, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "40"}


def _on_terminal(*args: str, stdout_too: bool = True) -> tuple[int, str, str]:
    """Run the command with stderr (and stdout unless told otherwise) on a pseudo-terminal;
    read it until the command ends, within a deadline. The exit status, what the terminal
    showed, and stdout when it was a pipe."""
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    child = subprocess.Popen(_command(*args), cwd=ROOT, env=_environment(), stdin=follower,
                             stdout=follower if stdout_too else subprocess.PIPE,
                             stderr=follower, close_fds=True)
    os.close(follower)
    shown = bytearray()
    deadline = time.monotonic() + 60 * patience()
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if not ready:
                if child.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        else:
            raise AssertionError(f"{' '.join(args)} did not end within the deadline")
        piped = child.stdout.read().decode() if child.stdout is not None else ""
        return child.wait(timeout=10 * patience()), shown.decode(errors="replace"), piped
    finally:
        os.close(leader)
        if child.poll() is None:
            child.kill()
            child.wait()


def _piped(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command(*args), cwd=ROOT, env=_environment(), capture_output=True,
                          text=True, timeout=60 * patience(), check=False)


def test_a_terminal_sees_live_progress_of_simulate_and_check() -> None:
    code, shown, _ = _on_terminal(*SIMULATE)
    assert code == 0, shown[-2000:]
    assert HIDE_CURSOR in shown
    text = ANSI.sub("", shown)
    assert re.search(r"simulate chaos ━+.* \d+/40 seeds", text), text[:2000]
    assert "40/40 seeds" in text
    assert re.search(r"ETA \d+:\d\d", text), "a known total shows the time left"
    assert "violations" in text
    assert text.rstrip().endswith("verdict: PASS (no violation)")

    code, shown, _ = _on_terminal(*CHECK)
    assert HIDE_CURSOR in shown
    text = ANSI.sub("", shown)
    assert re.search(r"model check +[\d,]+ states +[\d,]+ states/s", text), \
        "an unknown total shows the count and its rate"
    assert "ETA" not in text
    assert "transitions, depth" in text
    assert "\nmodel check: " in text.replace("\r", "")


def test_without_a_terminal_or_with_json_no_progress_is_drawn() -> None:
    for args in (QUIET_SIMULATE, QUIET_CHECK):
        done = _piped(*args)
        assert done.stderr == "", f"{args}: {done.stderr[:500]}"
        assert "\x1b" not in done.stdout
    assert done.stdout.startswith("model check: ")

    code, shown, _ = _on_terminal(*QUIET_SIMULATE, "--json")
    assert code == 0
    assert "\x1b" not in shown, "--json draws nothing, even on a terminal"
    assert json.loads(shown.replace("\r\n", "\n"))["seeds"] == 5

    code, shown, piped = _on_terminal(*QUIET_SIMULATE, stdout_too=False)
    assert code == 0
    assert shown == "", "stdout a pipe: quiet, even with stderr on a terminal"
    assert piped.startswith("atmostonce simulate: 5 seeds")
