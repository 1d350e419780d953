"""What a scenario report tells an SRE, on runs built so that the answer is known: the time to
record counts from the go-ahead, so a tool that waits for a person shows its own run time and
the wait apart; every reason a failed record gives is counted and named in the spec's words;
and a sweep gives each tool's times at each value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from atmostonce import cli
from atmostonce.sim.tool_stats import UNNAMED
from atmostonce.spec.records import FailureKind, failure_text

APPROVED_REFUNDS = """
[agent]
sessions = 20
[executor]
approval_deadline = 300.0
[approvals]
approve = 0.8
never = 0.2
answer_delay = 100.0
[[tools]]
name = "refund"
effect = "idempotent_write"
requires_approval = true
duration = 2.0
failure_rate = 0.0
"""
"""People answer in exactly 100 s or never (the 300 s deadline rejects); a refund runs 2 s."""

EVERY_FAILURE = """
[agent]
sessions = 30
[executor]
workers = 1
max_attempts = 1
queue_timeout = 2.0
run_timeout = 5.0
heartbeat_timeout = 2.0
[faults]
worker_crashes_per_hour = 60
[[tools]]
name = "slow_read"
effect = "read"
duration = 3.0
failure_rate = 0.2
hang_rate = 0.1
"""
"""One worker for 3 s reads that get one attempt: asks queue past the queue timeout (did not
run), runs fail (tool error), hang past the run timeout (may still be running) or die with
their worker (may have run)."""


def simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str,
             *argv: str) -> tuple[str, Any]:
    """The text report and the --json one of the scenario `text`, 2 seeds."""
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    args = ["simulate", "--scenario", str(path), "--seeds", "2", *argv]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert cli.main([*args, "--json"]) == 0
    return out, json.loads(capsys.readouterr().out)


def test_a_tool_that_waits_for_a_person_shows_its_run_time_and_the_wait_apart(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Measured from the ask, the refund's p99 would be the 300 s deadline and its median the
    100 s answer; from the go-ahead it is the 2 s run, and the wait is reported on its own."""
    out, report = simulate(capsys, tmp_path, APPROVED_REFUNDS)
    refund = report["tools"]["refund"]
    run = refund["time_from_go_ahead_to_record"]
    assert 2.0 <= run["p50"] <= run["p99"] < 2.5
    wait = refund["approval_wait"]
    assert wait["p50"] == pytest.approx(100.0)
    assert wait["p99"] == pytest.approx(300.0)
    ends = refund["approval_ends"]
    rejected = refund["records"]["rejected"]["count"]
    assert ends["approved"] == refund["records"]["succeeded"]["count"] > 0
    assert ends["deadline"] == rejected == refund["rejected_by_reason"]["deadline"]["count"] > 0
    assert refund["recorded_without_go_ahead"] == rejected
    assert "  from go-ahead to record p50 2.01 s" in out
    assert f"  approval wait p50 100 s, p99 300 s (approved {ends['approved']}, deadline " \
           f"{rejected})" in out
    assert "  deadline: rejected: the approval deadline passed before anyone answered" in out


def test_every_reason_a_failed_record_gives_is_counted_in_the_specs_words(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out, report = simulate(capsys, tmp_path, EVERY_FAILURE)
    read = report["tools"]["slow_read"]
    reasons = {r: s["count"] for r, s in read["failed_by_reason"].items()}
    assert reasons[UNNAMED] == 0
    assert all(reasons[kind.value] > 0 for kind in FailureKind), reasons
    assert sum(reasons.values()) == read["records"]["failed"]["count"]
    for kind in FailureKind:
        assert f"\n    {kind.value:<22}{reasons[kind.value]:>7,} " in out
        assert f"\n  {kind.value}: {failure_text(kind)}\n" in out
    assert read["time_from_go_ahead_to_record"]["p99"] <= 5.0 + 0.1, "the run timeout"


def test_a_sweep_gives_each_tools_times_at_each_value(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A slower refund takes longer from its go-ahead to its record; the wait for a person,
    which the setting does not touch, stays; both per tool, in the text and the JSON."""
    out, report = simulate(capsys, tmp_path, APPROVED_REFUNDS,
                           "--sweep", "tools.refund.duration=2,20")
    runs = [row["tools"]["refund"]["time_from_go_ahead_to_record"]["p50"]
            for row in report["rows"]]
    waits = [row["tools"]["refund"]["approval_wait"]["p50"] for row in report["rows"]]
    assert runs[0] == pytest.approx(2.0, abs=0.1)
    assert runs[1] == pytest.approx(20.0, abs=0.1)
    assert waits == [100.0, 100.0]
    lines = out.splitlines()
    times = lines.index(next(line for line in lines if "to record p50/p99 s by tool" in line))
    assert lines[times].split()[-2:] == ["2", "20"]
    cells = lines[times + 1].split()
    assert cells[0] == "refund"
    assert [c.split("/")[0] for c in cells[1:]] == [f"{runs[0]:.2f}", f"{runs[1]:.2f}"]
    waits_at = lines.index(next(line for line in lines if "approval wait p50/p99 s by tool"
                                in line))
    assert lines[waits_at + 1].split() == ["refund", "100/300", "100/300"]
