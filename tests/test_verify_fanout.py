"""`verify --processes N` fans the simulation layer's seeds (and the conformance layer's
schedules) out with the verdict, counts and findings of the serial run; only the timings
differ."""

from __future__ import annotations

import json
import re
import subprocess
import sys

BROKEN = "atmostonce.executor.mutants:retry_non_idempotent"


def verify(*extra: str) -> tuple[int, list[dict[str, object]]]:
    """`verify --quick --layers simulation --json` on the broken executor, run as a user runs
    it: its exit status and its checks, the timings taken out."""
    done = subprocess.run([sys.executable, "-m", "atmostonce", "verify", "--quick", "--layers",
                           "simulation", "--executor", BROKEN, "--json", *extra],
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode in (0, 1), done.stderr
    checks: list[dict[str, object]] = json.loads(done.stdout)["checks"]
    for check in checks:
        del check["seconds"]
        check["summary"] = re.sub(r"\d+\.\d s;", "(time);", str(check["summary"]))
    return done.returncode, checks


def test_the_simulation_layer_on_two_processes_finds_what_one_finds() -> None:
    serial = verify()
    assert serial[0] == 1
    [check] = serial[1]
    assert check["failing_seeds"]
    details = check["details"]
    assert isinstance(details, list)
    assert any("shrunk from" in line for line in details)
    assert verify("--processes", "2") == serial
