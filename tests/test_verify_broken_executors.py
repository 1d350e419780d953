"""`atmostonce verify` on executors that step outside the protocol: each layer that drives the
executor reports a FAIL with the exception or the wrong value and the step that caused it, the
other layers still run and report, `--json` stays valid JSON and the exit status is 1, never a
traceback. The runtime layer's side of this is in tests/chaos/test_executor_failures.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce import verify
from atmostonce.progress import Board, Meter
from atmostonce.verify import CheckResult, Planned
from tests.check.executors.broken_executors import BROKEN, path
from tests.load import patience

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "atmostonce", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300 * patience(), check=False)


def _has(details: list[str], words: tuple[str, ...]) -> bool:
    text = "\n".join(details)
    return all(word in text for word in words)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_conformance_fails_with_the_breach_and_the_schedule_so_far(name: str) -> None:
    """The conformance layer names the call that broke the protocol and the model steps that
    led to it, instead of stopping on the executor's exception."""
    factory, words = BROKEN[name]
    result = verify.check_conformance(path(name), factory)
    assert not result.ok
    assert result.summary.endswith("THE EXECUTOR BROKE THE PROTOCOL")
    assert result.details[0].startswith("the executor broke the protocol (fence off): ")
    assert _has(result.details, words), result.details
    assert result.details[1].startswith("schedule so far: ")


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_simulation_fails_with_the_seed_the_breach_and_the_replay_command(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulation layer names the failing seed, the call that broke the protocol (with the
    event it handled) and the command that reproduces it."""
    monkeypatch.setattr(verify, "SIMULATION_SEEDS", 12)
    factory, words = BROKEN[name]
    result = verify.check_simulation(path(name), factory)
    assert not result.ok
    seed = result.data["failing_seeds"][0]  # type: ignore[index]
    assert result.details[0] == f"seed {seed} (profile chaos) failed"
    assert result.details[1].startswith("executor error: t=")
    assert _has(result.details, words), result.details
    assert f"replay: atmostonce replay {seed} --profile chaos --executor {path(name)}" \
        in result.details


def test_a_check_that_stops_on_an_exception_fails_and_the_next_check_still_runs() -> None:
    """Whatever escapes a check becomes that check's FAIL, with the exception and where it
    was raised, so one broken layer never hides the others' verdicts."""
    def broken(meter: Meter) -> CheckResult:
        raise LookupError("the harness lost its place")

    def fine(meter: Meter) -> CheckResult:
        return CheckResult("spec", "fine", True, "held")

    seen: list[str] = []

    class Seen(Board):
        def meter(self, what: str, total: float | None = None, unit: str = "") -> Meter:
            seen.append(what)
            return super().meter(what, total, unit)

    results = verify.run([Planned("simulation", "broken", broken),
                          Planned("spec", "fine", fine)], Seen(live=False))
    assert seen == ["simulation: broken", "spec: fine"]
    assert [r.ok for r in results] == [False, True]
    assert results[0].layer == "simulation"
    assert results[0].summary == "the check stopped on LookupError: the harness lost its place"
    assert "test_verify_broken_executors.py:" in results[0].details[0]


@pytest.mark.slow
def test_verify_json_reports_both_failing_layers_and_exits_1() -> None:
    """End to end, as an engine builder runs it: both executor layers fail with the breach,
    the output is one JSON object, the exit status is 1 and nothing is a traceback."""
    done = _run("verify", "--executor", path("returns_string"), "--layers",
                "conformance,simulation", "--json")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "fail"
    checks = {check["layer"]: check for check in report["checks"]}
    assert set(checks) == {"conformance", "simulation"}
    for check in checks.values():
        assert not check["ok"]
        assert _has(check["details"], BROKEN["returns_string"][1]), check["details"]


@pytest.mark.slow
def test_verify_text_marks_each_executor_layer_fail_and_exits_1() -> None:
    """The text report shows a [FAIL] line per executor layer, the exception with its type and
    message, and the verdict; the exit status is 1, not 2."""
    done = _run("verify", "--executor", path("raises_on_ask"), "--layers",
                "conformance,simulation")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("  [FAIL] conformance") for line in lines)
    assert any(line.startswith("  [FAIL] simulation") for line in lines)
    assert done.stdout.count("raised RuntimeError: cannot take the call") >= 2
    assert lines[-1] == "verdict: FAIL (3 checks, 3 failed)"  # the deep lockstep too


def test_a_factory_that_cannot_build_an_executor_is_still_bad_input() -> None:
    """Before any layer starts, an executor path that does not build an Executor is the user's
    input to fix: one line, exit 2."""
    done = _run("verify", "--executor", "atmostonce.spec.keys:build_key", "--layers",
                "conformance")
    assert done.returncode == 2
    assert done.stderr.startswith("atmostonce: error: executor factory")
    assert done.stderr.count("\n") == 1
