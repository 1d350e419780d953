"""`--report FILE` on verify, simulate (a profile, a scenario, a sweep) and chaos: bad input (a
path that cannot be written, the report extra missing) is one line and exit 2, said before any
long run starts."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from atmostonce.cli import main

COMMANDS = {
    "verify": ["verify"],
    "simulate": ["simulate", "--seeds", "1000000"],
    "scenario": ["simulate", "--scenario", "examples/support_agent.toml", "--seeds", "1000000"],
    "sweep": ["simulate", "--scenario", "examples/support_agent.toml", "--seeds", "1000000",
              "--sweep", "executor.workers=2,3"],
    "chaos": ["chaos", "--duration", "600"],
}
"""Each would run for many minutes: a quick exit shows nothing started."""


def _quick(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    started = time.monotonic()
    code = main(argv)
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1
    assert err.startswith("atmostonce: error: ")
    return err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_unwritable_report_path_is_bad_input_before_the_run(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _quick([*COMMANDS[command], "--report", str(tmp_path / "missing" / "r.html")], capsys)
    assert "missing" in err
    assert "--report" in err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_directory_is_no_report_file(command: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    err = _quick([*COMMANDS[command], "--report", str(tmp_path)], capsys)
    assert "is a directory" in err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_report_without_its_libraries_names_the_extra(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without_jinja(name: str, *args: object) -> object:
        return None if name == "jinja2" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", without_jinja)
    err = _quick([*COMMANDS[command], "--report", str(tmp_path / "r.html")], capsys)
    assert "--report needs jinja2: pip install 'atmostonce[report]'" in err
    assert not (tmp_path / "r.html").exists()
