"""`simulate --scenario --report FILE`: the page a scenario run writes has its plots per tool
(records, failed records by reason, time from the go-ahead to the record, the wait for a
person), the call machines its histories took and, for a broken executor, the failing seed as
a sequence chart with its replay command; a sweep's page charts each record's share and each
tool's times against the swept value, one verdict per value; a page that cannot be written
once the run is over is still one line and exit 2."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from atmostonce import cli
from atmostonce.sim.scenario import load
from atmostonce.sim.scenario_run import ScenarioResult, simulate

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SUPPORT = str(EXAMPLES / "support_agent.toml")
TOOLS = [tool.name for tool in load(SUPPORT).tools]
MUTANT = "atmostonce.executor.mutants:approval_default_ignored"


def plots(html: str) -> dict[str, str]:
    """Each plot's title and its picture."""
    return dict(re.findall(r'<div class="chart plot"><h3>(.*?)</h3>(.*?)</div>', html, re.S))


def page(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str,
         code: int = 0) -> tuple[str, str]:
    """The page and the text report of `simulate --scenario SUPPORT --seeds 2 ARGV`."""
    path = tmp_path / "r.html"
    assert cli.main(["simulate", "--scenario", SUPPORT, "--seeds", "2", *argv,
                     "--report", str(path)]) == code
    out = capsys.readouterr().out
    return path.read_text(encoding="utf-8"), out


def test_a_scenario_page_plots_every_tool(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    html, out = page(capsys, tmp_path)
    assert "verdict: PASS" in out, "the text report still prints"
    shown = plots(html)
    assert list(shown) == ["Records per tool", "Failed records by reason, per tool",
                           "Time from go-ahead to record, per tool",
                           "Wait for a person, per tool"]
    assert all("<svg" in svg for svg in shown.values())
    for title in ("Records per tool", "Time from go-ahead to record, per tool"):
        assert all(f">{name}<" in shown[title] for name in TOOLS), title
    waiting = [t.name for t in load(SUPPORT).tools if t.effective.requires_approval]
    assert sorted(n for n in TOOLS if f">{n}<" in shown["Wait for a person, per tool"]) == \
        sorted(waiting)
    assert ">tool_error<" in shown["Failed records by reason, per tool"]
    assert 'data-machine="CallSingleAttemptTool"' in html
    assert f"--scenario {SUPPORT} --seeds 2 --first-seed 0 --report" in html
    assert 'id="verdict">PASS' in html


def test_a_broken_executors_page_shows_its_failing_seed(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    html, out = page(capsys, tmp_path, "--executor", MUTANT, "--set",
                     "faults.server_restarts_per_hour=2", code=1)
    assert "verdict: FAIL" in out
    assert 'id="verdict">FAIL' in html
    charts = re.findall(r'<div class="chart counterexample"><h3>(.*?)</h3>', html)
    assert any("A-APPROVAL" in title for title in charts), charts
    assert f"atmostonce replay 0 --scenario {SUPPORT}" in html


def test_a_sweep_page_charts_each_record_and_each_tools_times_against_the_value(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    html, _ = page(capsys, tmp_path, "--sweep", "executor.heartbeat_timeout=4,16")
    shown = plots(html)
    records = shown["Records against executor.heartbeat_timeout"]
    for label in ("succeeded", "failed", "rejected", "outcome_unknown", ">4<", ">16<",
                  "executor.heartbeat_timeout"):
        assert label in records, label
    times = shown["Time from go-ahead to record per tool"]
    assert all(f">{name}<" in times for name in TOOLS)
    assert "Wait for a person per tool" in shown
    assert re.findall(r"<td>(executor\.heartbeat_timeout=\d+)</td>", html) == [
        "executor.heartbeat_timeout=4", "executor.heartbeat_timeout=16"]
    assert "Not measured in this layer: a sweep runs the scenario once per value" in html


def test_a_page_that_cannot_be_written_after_the_run_is_one_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The directory was there when the command started and is gone when the page is due."""
    gone = tmp_path / "gone"
    gone.mkdir()

    def then_remove(*args: object, **kwargs: object) -> ScenarioResult:
        result = simulate(*args, **kwargs)  # type: ignore[arg-type]
        shutil.rmtree(gone)
        return result

    monkeypatch.setattr("atmostonce.sim.scenario_commands.simulate", then_remove)
    code = cli.main(["simulate", "--scenario", SUPPORT, "--seeds", "1", "--report",
                     str(gone / "r.html")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith(f"atmostonce: error: --report {gone / 'r.html'}: cannot write it")


def test_a_failing_seeds_outcome_unknown_calls_are_listed_with_their_keys(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    html, _ = page(capsys, tmp_path, "--executor", MUTANT, "--set",
                   "faults.server_restarts_per_hour=2", code=1)
    table = re.search(r"<h3>Seed \d+: calls recorded outcome_unknown \((\d+)\)</h3>(.*?)</table>",
                      html, re.S)
    assert table is not None
    keys = re.findall(r"<td>(s\d+/t\d+/c\d+)</td>", table[2])
    assert len(keys) == int(table[1]) > 0
