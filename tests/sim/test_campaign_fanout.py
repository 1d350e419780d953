"""A campaign fanned out over worker processes or a local Ray gives the serial run's results:
the same statistics, violations, failures and shrunk schedules, byte for byte in `simulate
--json` but for the timings. The campaign runs a broken executor whose failing seeds fall in
different chunks, so failures merged out of order would show."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.executor import reference
from atmostonce.fanout.ray_tasks import on_ray
from atmostonce.fanout.way import way
from atmostonce.sim.campaign import campaign
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import Executor, ExecutorConfig

BROKEN = "atmostonce.executor.mutants:retry_non_idempotent"
"""Fails 5 of the first 12 chaos seeds (1, 2, 5, 7 and 8), passes the others."""
SEEDS = "12"
TIMINGS = ("seconds", "calls_per_second", "cpu_seconds", "calls_per_cpu_second")


def simulate(*way_given: str) -> tuple[int, str]:
    """`atmostonce simulate --json` of the broken executor, run as a user runs it: its exit
    status and its JSON without the timings, as text."""
    done = subprocess.run([sys.executable, "-m", "atmostonce", "simulate", "--seeds", SEEDS,
                           "--executor", BROKEN, "--json", *way_given],
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    for field in TIMINGS:
        assert field in result
        del result[field]
    return done.returncode, json.dumps(result, indent=1)


@pytest.fixture(scope="module")
def serial() -> tuple[int, str]:
    code, text = simulate()
    result = json.loads(text)
    assert code == 1
    assert [f["seed"] for f in result["failures"]] == [1, 2, 5, 7, 8]
    assert sum("shrunk" in f for f in result["failures"]) == 3
    return code, text


def test_two_processes_give_the_serial_results(serial: tuple[int, str]) -> None:
    assert simulate("--processes", "2") == serial


def test_a_local_ray_gives_the_serial_results(serial: tuple[int, str]) -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (the ray extra: pip install -e '.[ray]'; CI "
                    "installs it)")
    assert simulate("--ray", "local", "--processes", "2") == serial


def refuse(n: int) -> int:
    if n == 2:
        raise SpecError(f"no {n} here")
    return n


def test_a_task_s_error_on_ray_is_that_error_here() -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (the ray extra: pip install -e '.[ray]'; CI "
                    "installs it)")
    with pytest.raises(SpecError) as raised:
        list(on_ray(refuse, [1, 2, 3], "local", 1))
    assert type(raised.value) is SpecError
    assert str(raised.value) == "no 2 here"


def test_without_ray_given_ray_is_never_imported() -> None:
    probe = ("import sys\nfrom atmostonce.cli import main\n"
             "main(['simulate', '--seeds', '4', '--processes', '2', '--json'])\n"
             "sys.stderr.write(str('ray' in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stderr.strip().splitlines()[-1] == "False", done.stderr
    assert json.loads(done.stdout)["seeds"] == 4


def test_a_factory_made_on_the_fly_cannot_fan_out() -> None:
    def built(config: ExecutorConfig) -> Executor:
        return reference(config)

    with pytest.raises(SpecError, match="cannot fan the work out"):
        campaign(range(2), "chaos", built, DEFAULT_EXECUTOR, way=way(2))


def test_ray_missing_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    task: Callable[[int], int] = abs
    with pytest.raises(SpecError, match=r"pip install 'atmostonce\[ray\]'"):
        list(on_ray(task, [1], "local"))
