"""The skeleton executor an engine builder starts from (`examples/my_executor.py`) is judged for
real: it passes `atmostonce verify`'s conformance and simulation layers, loaded by its README
path, and a one-line break of its own code fails them with exit 1. The full `verify` of it (every
layer at its default size) takes minutes; here conformance replays every transition within
depth 7, not 9, and simulation runs 60 seeds, not 300."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce import cli, verify
from tests.load import patience

ROOT = Path(__file__).resolve().parent.parent
SKELETON = ROOT / "examples" / "my_executor.py"
PATH = "examples.my_executor:factory"

FORGETS_STARTED = ("            case Started():\n                return self.on_started(event)\n",
                   "            case Started():\n                return []\n")
"""The skeleton's dispatch drops the worker's `Started`: the attempt history never shows it."""
IGNORES_FENCE = ("            if not self.fenced(attempt):\n", "            if True:\n")
"""The skeleton's scheduler hands out past the fence (D-6)."""


def broken_copy(directory: Path, name: str, change: tuple[str, str]) -> str:
    """The skeleton with one line changed, as module `name` in `directory`; its path."""
    source = SKELETON.read_text()
    old, new = change
    assert source.count(old) == 1, f"the skeleton no longer has {old!r}"
    (directory / f"{name}.py").write_text(source.replace(old, new))
    return f"{name}:factory"


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "CONFORMANCE_DEPTH", 7)
    monkeypatch.setattr(verify, "SIMULATION_SEEDS", 60)


@pytest.mark.slow
@pytest.mark.clause("D-5", "D-6", "D-8")
@pytest.mark.usefixtures("small")
def test_the_skeleton_passes_verify_conformance_and_simulation(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    code = cli.main(["verify", "--executor", PATH, "--layers", "conformance,simulation"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "[  ok] conformance" in out
    assert "[  ok] simulation" in out
    assert "verdict: PASS (3 checks, 0 failed)" in out  # conformance, deep lockstep, simulation


def test_a_one_line_break_of_the_skeleton_fails_verify_conformance(tmp_path: Path) -> None:
    """The real command, at its full depth, loading the broken copy from the current
    directory as a builder's module is loaded."""
    path = broken_copy(tmp_path, "forgets_started", FORGETS_STARTED)
    run = subprocess.run([sys.executable, "-m", "atmostonce", "verify", "--executor", path,
                          "--layers", "conformance"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120 * patience(), check=False)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "DISAGREES" in run.stdout
    assert "does not show the Started of its live attempt" in run.stdout
    assert "verdict: FAIL (2 checks, 2 failed)" in run.stdout  # with the deep lockstep


@pytest.mark.clause("D-6")
@pytest.mark.usefixtures("small")
def test_a_skeleton_scheduler_that_ignores_the_fence_fails_both_layers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Conformance catches it with the fence on (a worker gets work the model holds back),
    simulation as A-FENCE with a seed to replay."""
    path = broken_copy(tmp_path, "ignores_fence", IGNORES_FENCE)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["verify", "--executor", path, "--layers", "conformance,simulation"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "the model hands out nothing here (fence on)" in out
    assert "A-FENCE" in out
    assert f"--executor {path}" in out
    assert "verdict: FAIL (3 checks, 2 failed)" in out  # the deep lockstep runs the fence off
