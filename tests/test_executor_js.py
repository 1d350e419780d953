"""The executor in plain JavaScript (`examples/executor-js`) is judged for real, over the pipe:
it passes `atmostonce verify --executor-cmd "node examples/executor-js/main.js"` at its defaults
(every layer: the spec and model, conformance to depth 9 with the probes and the deep lockstep,
300 simulation seeds, the runtime's chaos run; about 3 minutes on 2 cores), and its one-line
break (`broken.js`: a non-idempotent write retried like a read) fails conformance with exit 1, a
counterexample schedule and the command that replays it on the child. An answer after a call's
kept approval deadline is driven through the pipe with the deadline's timer not yet fired."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from atmostonce.check.executors.child import Child, split
from atmostonce.check.executors.pipe import PipeExecutor
from atmostonce.spec.approval import REPLY_TEXT, ApprovalReply
from atmostonce.spec.policy import EffectClass
from atmostonce.spec.protocol import (
    Answer,
    Executor,
    ExecutorConfig,
    Reply,
    StopTimer,
    TimerKind,
)
from atmostonce.spec.records import RejectReason, reject_text
from atmostonce.spec.session import ToolCallStatus
from tests.executor.driver import Driver
from tests.load import patience

ROOT = Path(__file__).resolve().parent.parent
MAIN = "node examples/executor-js/main.js"
BROKEN = "node examples/executor-js/broken.js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None,
                                reason="node is not on PATH (CI installs nodejs in .ci/run)")


def _verify(*args: str, minutes: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "atmostonce", "verify", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False,
                          timeout=60 * minutes * patience())


LAYER_LINES = (
    "[  ok] spec   clause coverage",
    "[  ok] spec   CrossHair proofs",
    "[  ok] model  exhaustive check",
    "[  ok] conformance model-generated schedules: 104,273 schedules (every transition), "
    "869,587 steps within depth 9 and 3,650 policy resolutions on --executor-cmd "
    f"'{MAIN}'",
    "[  ok] conformance deep lockstep",
    "[  ok] simulation fault-simulation campaign: 300 chaos seeds",
    "[  ok] runtime chaos on the real runtime",
)
"""The line of every check verify runs at its defaults, as far as it names the check's size."""


@pytest.mark.clause("D-5", "D-8", "D-12")
def test_the_js_executor_passes_quick_verify_and_its_one_line_break_fails_it() -> None:
    """The default run's share of the two long tests below: conformance at the quick depth
    with the probes and the quick simulation campaign, on the child and on its break."""
    done = _verify("--quick", "--executor-cmd", MAIN, minutes=5)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: PASS" in done.stdout
    broken = _verify("--quick", "--executor-cmd", BROKEN, minutes=5)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "DISAGREES" in broken.stdout
    assert "schedule: ask(2)" in broken.stdout  # tool 2 is the non-idempotent write


@pytest.mark.long
@pytest.mark.clause("D-5", "D-8", "D-12")
def test_the_js_executor_passes_verify_at_its_defaults() -> None:
    """Every layer verify runs by default, at its default size, on the child."""
    done = _verify("--executor-cmd", MAIN, minutes=15)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for expected in LAYER_LINES:
        assert any(line.strip().startswith(expected) for line in lines), (expected, done.stdout)
    runtime = next(line for line in lines if "chaos on the real runtime" in line)
    assert f"on --executor-cmd '{MAIN}'" in runtime
    assert "0 violations, 0 lost records" in runtime
    assert "verdict: PASS (7 checks, 0 failed)" in done.stdout


@pytest.mark.long
@pytest.mark.clause("TC-POL-2")
def test_the_js_executor_with_one_line_broken_fails_verify_at_its_defaults() -> None:
    """Every layer that judges the executor fails on it (the ones that judge the package pass),
    and conformance prints the shortest schedule with the command that replays it."""
    done = _verify("--executor-cmd", BROKEN, minutes=10)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    for judged in ("conformance model-generated schedules", "conformance deep lockstep",
                   "simulation fault-simulation campaign", "runtime chaos on the real runtime"):
        assert any(line.startswith(f"[FAIL] {judged}") for line in lines), (judged, done.stdout)
    assert "verdict: FAIL (7 checks, 4 failed)" in done.stdout
    assert "DISAGREES" in done.stdout
    assert "schedule: ask(2)" in done.stdout  # tool 2 is the non-idempotent write
    assert "replay step by step: atmostonce replay --schedule 'ask(2)" in done.stdout
    assert f"--executor-cmd '{BROKEN}'" in done.stdout
    assert "verdict: FAIL" in done.stdout
    printed = next(line for line in done.stdout.splitlines() if "replay step by step: " in line)
    command = shlex.split(printed.split("replay step by step: ", 1)[1])
    assert command[0] == "atmostonce"
    again = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True,
                           text=True, check=False, timeout=60 * patience())
    assert again.returncode == 1, again.stdout + again.stderr
    assert f"on --executor-cmd '{BROKEN}'" in again.stdout, "replayed on the child it names"
    assert "verdict: DISAGREES" in again.stdout


def test_the_js_child_refuses_a_protocol_version_it_does_not_speak() -> None:
    done = subprocess.run(["node", str(ROOT / "examples/executor-js/main.js")],
                          input='{"op":"hello","protocol":2}\n', capture_output=True, text=True,
                          check=False, timeout=30 * patience())
    reply = json.loads(done.stdout)
    assert reply["op"] == "refuse"
    assert "protocol 1, not 2" in reply["reason"]


def test_the_broken_copy_differs_from_the_executor_by_one_line() -> None:
    """`broken.js` starts the very server `main.js` starts; its only other statement is the
    bug."""
    code = [line for line in (ROOT / "examples/executor-js/broken.js").read_text().splitlines()
            if line.strip() and not line.startswith("//")]
    assert code == ["'use strict';",
                    "require('./spec').RETRYABLE.add('non_idempotent_write');",
                    "require('./main').serve(process.stdin, process.stdout);"]


@pytest.fixture
def js_child() -> Iterator[Child]:
    """One `main.js` child, greeted, ended after the test."""
    running = Child(split(MAIN), 30 * patience())
    running.hello()
    yield running
    running.close()


@pytest.mark.clause("D-7", "D-32")
@pytest.mark.parametrize("restarted", [False, True], ids=["running", "after-restart"])
@pytest.mark.parametrize("approve", [True, False], ids=["approve", "reject"])
def test_the_js_child_lets_an_answer_after_the_kept_deadline_lose_though_its_timer_is_late(
    js_child: Child, approve: bool, restarted: bool,
) -> None:
    """An answer whose `at` is at or past the ask plus the kept deadline, while the deadline's
    timer has not fired (a stalled loop; a restart that started it again), is refused as past
    the deadline and the call is recorded rejected by the deadline, with its timer stopped."""

    def factory(config: ExecutorConfig) -> Executor:
        return PipeExecutor(js_child, config)

    d = Driver(factory=factory)
    d.open()
    d.policy("tool", EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=True)
    key = d.ask("tool")
    d.now += d.config.approval_deadline
    if restarted:
        d.restart()
    assert d.pending(TimerKind.APPROVAL_DEADLINE, key)
    timer = d.timers[(TimerKind.APPROVAL_DEADLINE, key)].timer
    answered = d.send(Answer(d.now, "r1", key, approve))
    assert [c for c in answered if isinstance(c, Reply)] == [
        Reply("r1", False, REPLY_TEXT[ApprovalReply.DEADLINE_PASSED])]
    assert StopTimer(timer) in answered
    view = d.view(key)
    assert (view.status, view.error) == (ToolCallStatus.REJECTED,
                                         reject_text(RejectReason.DEADLINE))
    assert not d.pending(TimerKind.APPROVAL_DEADLINE, key)
    assert d.poll("w1") is None


@pytest.mark.clause("D-7", "D-32")
def test_the_js_child_takes_an_answer_just_before_the_kept_deadline(js_child: Child) -> None:
    """The edge on the other side: an instant before the deadline the answer still decides."""

    def factory(config: ExecutorConfig) -> Executor:
        return PipeExecutor(js_child, config)

    d = Driver(factory=factory)
    d.open()
    d.policy("tool", EffectClass.NON_IDEMPOTENT_WRITE, requires_approval=True)
    key = d.ask("tool")
    d.now += d.config.approval_deadline - 0.001
    assert d.answer(key, True) == Reply("r1", True, REPLY_TEXT[ApprovalReply.ACCEPTED])
    assert d.poll("w1") is not None
