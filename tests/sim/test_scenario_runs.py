"""`simulate --scenario`: the examples run and pass, the same seeds print the same report, a
sweep prints one row per value and moves the figures the way the mechanism says, a broken
executor still fails with a replay command that reproduces it, and the file's rates are the
rates the runs see."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce import cli
from atmostonce.executor import reference
from atmostonce.sim.scenario import load
from atmostonce.sim.scenario_draw import schedule
from atmostonce.sim.scenario_run import simulate
from atmostonce.sim.stats import wilson
from atmostonce.sim.tool_stats import combined
from tests.load import patience

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SUPPORT = str(EXAMPLES / "support_agent.toml")
MCP_SCENARIO = str(EXAMPLES / "mcp_server.toml")
MUTANT = "atmostonce.executor.mutants:approval_default_ignored"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("path", [SUPPORT, MCP_SCENARIO], ids=["support_agent", "mcp_server"])
def test_the_examples_run_and_exit_0(capsys: pytest.CaptureFixture[str], path: str) -> None:
    code, out, err = run(capsys, "simulate", "--scenario", path, "--seeds", "3")
    assert code == 0, out
    assert err == ""
    assert "verdict: PASS" in out
    for tool in load(path).tools:
        assert f"\n{tool.name} (" in out
    assert "95% interval" in out
    assert "outcome_unknown" in out


def test_the_same_seeds_print_the_same_report(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("simulate", "--scenario", MCP_SCENARIO, "--seeds", "2", "--first-seed", "7")
    assert run(capsys, *argv) == run(capsys, *argv)
    first = run(capsys, *argv, "--json")
    assert first == run(capsys, *argv, "--json")
    report = json.loads(first[1])
    assert report["first_seed"] == 7
    assert report["seeds"] == 2
    assert set(report["tools"]) == {t.name for t in load(MCP_SCENARIO).tools}
    assert run(capsys, "simulate", "--scenario", MCP_SCENARIO, "--seeds", "2")[1] != \
        run(capsys, *argv)[1]


def test_a_sweep_prints_one_row_per_value(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "simulate", "--scenario", SUPPORT, "--seeds", "2",
                         "--sweep", "executor.heartbeat_timeout=4,16")
    assert code == 0, out
    assert err == "", "no progress when stderr is not a terminal"
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["4"], ["16"])]
    assert [r[0] for r in rows] == ["4", "16"]
    assert all(r[-1] == "pass" for r in rows)
    code, out, err = run(capsys, "simulate", "--scenario", SUPPORT, "--seeds", "2", "--json",
                         "--sweep", "executor.heartbeat_timeout=4,16")
    report = json.loads(out)
    assert report["values"] == ["4", "16"]
    assert [r["scenario"]["settings"] for r in report["rows"]] == [
        {"executor.heartbeat_timeout": "4"}, {"executor.heartbeat_timeout": "16"}]


def test_a_sweep_tells_a_terminal_of_each_value(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal the sweep's live line counts the values done and tells the last one's
    figures; the rows themselves stay on stdout, and with --json nothing goes to stderr."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "160")
    argv = ("simulate", "--scenario", SUPPORT, "--seeds", "1", "--sweep",
            "faults.server_restarts_per_hour=0,5")
    code, out, err = run(capsys, *argv)
    assert code == 0
    assert "sweep faults.server_restarts_per_hour" in err
    assert "2/2 values" in err
    assert "faults.server_restarts_per_hour=5: 1 seeds" in err
    assert "2/2 values" not in out
    assert run(capsys, *argv, "--json")[2] == ""


def test_a_longer_heartbeat_timeout_gives_fewer_outcome_unknown_known_later() -> None:
    """The lease is half the heartbeat timeout (D-12): a longer one lets a worker ride out a
    longer connection loss, so fewer single-attempt calls end outcome_unknown, down to the floor
    of runs cancelled by the run timeout (D-4), which no heartbeat setting moves; a worker that
    really died is declared lost later, so those that still do are recorded later."""
    seeds = range(30)
    figures = []
    for timeout in ("3", "12", "48"):
        spec = load(SUPPORT, [("executor.heartbeat_timeout", timeout)])
        result = simulate(spec, seeds, reference)
        assert result.ok
        totals = combined(result.tools)
        unknown = totals.time_to_unknown()
        assert unknown is not None
        figures.append((totals.records["outcome_unknown"], unknown[1]))
    counts = [n for n, _ in figures]
    assert counts[0] > counts[1] >= counts[2], figures
    assert figures[0][1] < figures[2][1], figures


def test_a_broken_executor_fails_with_a_replay_command_that_reproduces_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "--scenario", SUPPORT, "--seeds", "1",
                       "--executor", MUTANT, "--set", "faults.server_restarts_per_hour=2")
    assert code == 1
    assert "verdict: FAIL" in out
    replays = [line.split("replay: ", 1)[1] for line in out.splitlines() if "replay: " in line]
    assert replays[0] == shlex.join([
        "atmostonce", "replay", "0", "--scenario", SUPPORT, "--set",
        "faults.server_restarts_per_hour=2", "--executor", MUTANT])
    assert "A-APPROVAL" in out
    for replay in replays:
        code, again, _ = run(capsys, *shlex.split(replay)[1:])
        assert code == 1
        assert "A-APPROVAL" in again
        assert "profile scenario" in again


def test_a_scenario_seed_replays_its_history(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "replay", "2", "--scenario", MCP_SCENARIO)
    assert code == 0
    assert "CallAsked" in out
    assert "verdict: PASS" in out
    code, _, err = run(capsys, "replay", "2", "--scenario", MCP_SCENARIO, "--faults", "999")
    assert code == 2
    assert "fault index 999 is out of range" in err


def test_a_tools_failure_rate_is_what_its_calls_show(tmp_path: Path) -> None:
    """A tool that returns a failure ends failed and is not run again (D-3)."""
    path = tmp_path / "s.toml"
    path.write_text('[agent]\nsessions = 40\n[[tools]]\nname = "flaky_read"\neffect = "read"\n'
                    "failure_rate = 0.25\n")
    result = simulate(load(str(path)), range(3), reference)
    t = result.tools["flaky_read"]
    low, high = wilson(t.records["failed"], t.calls)
    assert t.calls > 300
    assert low < 0.25 < high
    assert t.records["failed"] + t.records["succeeded"] == t.calls
    assert t.retries == 0


def test_fault_rates_are_per_hour_and_per_worker() -> None:
    spec = load(SUPPORT, [("faults.worker_crashes_per_hour", "10"),
                          ("faults.connection_losses_per_hour", "0"),
                          ("faults.server_restarts_per_hour", "0")])
    hours = 10.0
    crashes = [len(schedule(spec, seed, hours * 3600)[1]) for seed in range(20)]
    expected = 10 * hours * spec.executor.workers
    assert abs(sum(crashes) / len(crashes) - expected) < 0.1 * expected
    twice = load(SUPPORT, [("faults.worker_crashes_per_hour", "20")])
    first = next(f for f in schedule(spec, 5, 3600)[1] if f.target == 0)
    sooner = next(f for f in schedule(twice, 5, 3600)[1]
                  if f.target == 0 and f.kind is first.kind)
    assert sooner.at - 0.5 == pytest.approx((first.at - 0.5) / 2)
    assert sooner.duration == first.duration


def test_a_service_that_breaks_its_tools_promise_shows_repeated_writes(tmp_path: Path) -> None:
    """TC-EFF-IDEM: a retried idempotent write is harmless only when its service drops the
    repeated key; declared so against a service that applies every write, the retries after
    a crash show up as writes repeated, which the keyed service never has."""
    path = tmp_path / "s.toml"
    path.write_text('[agent]\nsessions = 30\n[faults]\nworker_crashes_per_hour = 300\n'
                    '[[tools]]\nname = "upsert"\neffect = "idempotent_write"\n'
                    "duration = 4\nfailure_rate = 0\n")
    keyed = simulate(load(str(path)), range(3), reference).tools["upsert"]
    plain = simulate(load(str(path), [("tools.upsert.service", "plain")]), range(3),
                     reference).tools["upsert"]
    assert keyed.retries > 0
    assert keyed.repeated_effects == 0
    assert plain.repeated_effects > 0


def test_the_report_does_not_depend_on_the_processs_hash_seed(tmp_path: Path) -> None:
    """Two processes with different string hashing print the same JSON, byte for byte."""
    root = Path(__file__).resolve().parents[2]
    outputs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(root)}
        done = subprocess.run([sys.executable, "-m", "atmostonce", "simulate", "--scenario",
                               MCP_SCENARIO, "--seeds", "2", "--json"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=False,
                              timeout=120 * patience())
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
