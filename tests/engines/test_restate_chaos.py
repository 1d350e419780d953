"""`atmostonce chaos` on Restate: a short run of the page's mapping with every nemesis judges every
property or lists it as not checkable (with the reason), and the at-most-once break Restate is
known for is caught: a `ctx.run` with `max_attempts=1` whose effect took place runs again after
the Restate server is SIGKILLed and restarted (the positive control, exit 1, A-ONE-ATTEMPT with
its shortest history excerpt; `pytest -s` prints it). Without the `restate` extra the engine's
path is one line of bad input.

The Restate server binary comes from npm (`atmostonce.engines.restate.server.binary`); without
it these tests skip, naming the install command. `.ci/run` installs it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from atmostonce.spec.properties import PROPERTIES, PropertyId
from tests.chaos.conftest import ROOT, chaos
from tests.runtime.conftest import gone

ENGINE = "atmostonce.engines.restate:engine"
KNOWN = {PropertyId.A_ONE_ATTEMPT, PropertyId.A_RETRY_CLASSES, PropertyId.A_DOUBLE_RUN_SHAPE,
         PropertyId.A_EXHAUSTED_RECORD}
"""What Restate's runs of a closure again after a crash break (docs/engines.md, R-1 and R-4):
a single-attempt call's second attempt, and a retried call's attempts past its max_attempts."""

pytestmark = pytest.mark.slow


def _server() -> None:
    pytest.importorskip("restate")
    pytest.importorskip("hypercorn")
    from atmostonce.engines.restate.server import binary
    from atmostonce.spec.errors import SpecError

    try:
        binary()
    except SpecError as error:
        pytest.skip(str(error))


def test_without_the_extra_the_engine_is_one_line_of_bad_input() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.modules['restate'] = None; "
         "from atmostonce.cli import main; sys.exit(main(sys.argv[1:]))",
         "chaos", "--engine", ENGINE, "--duration", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "atmostonce[restate]" in lines[0]


def test_the_restate_engine_refuses_the_fence_as_bad_input() -> None:
    _server()
    done = chaos("--engine", ENGINE, "--duration", "1", "--fence", timeout=120)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "no fence" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.clause("TC-REC-1", "TC-AMO-1", "TC-REC-LOST")
def test_a_short_chaos_run_judges_every_property_or_says_why_not() -> None:
    """Every nemesis for twelve seconds: each property judged or not checkable with the reason;
    what breaks is at most what Restate's runs of a closure again after a crash break (KNOWN),
    nothing else; every process is gone at the end."""
    _server()
    from atmostonce.engines.restate.adapter import NOT_CHECKABLE

    done = chaos("--engine", ENGINE, "--duration", "12", "--seed", "3", "--json", timeout=240)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    properties = report["properties"]
    judged, unjudged = properties["judged"], properties["not_checkable"]
    assert set(judged) | set(unjudged) == set(PROPERTIES)
    assert not set(judged) & set(unjudged)
    assert unjudged == NOT_CHECKABLE
    broken = {v["property"] for v in report["violations"]}
    assert broken <= KNOWN, [v for v in report["violations"] if v["property"] not in KNOWN]
    assert (done.returncode == 1) == bool(broken)
    assert report["calls"] > 10
    assert all(gone(pid) for pid in report["pids"])


@pytest.mark.clause("TC-EFF-NONIDEM", "TC-AMO-2", "D-8")
def test_restate_runs_a_single_attempt_closure_again_after_a_server_kill() -> None:
    """The positive control: server SIGKILLs and restarts at twice the usual rate meet a
    single-attempt call in the middle of its `ctx.run`; Restate replays the invocation and runs
    the closure again, though `max_attempts=1`. The chaos run must exit 1 naming A-ONE-ATTEMPT;
    the shortest such history excerpt is printed."""
    _server()
    done = chaos("--engine", ENGINE, "--nemesis", "restart", "--pace", "2", "--duration",
                 "12", "--seed", "1", "--json", timeout=240)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    caught = [v for v in report["violations"] if v["property"] == PropertyId.A_ONE_ATTEMPT]
    assert caught, report["violations"]
    assert all(f"--engine {ENGINE}" in v["rerun"] for v in caught)
    shortest = min(caught, key=lambda v: len(v["entries"]))
    print(f"{shortest['property']} [{shortest['call']}]: {shortest['message']}")
    print("\n".join(shortest["entries"]))
    assert all(gone(pid) for pid in report["pids"])
