"""The operator's stage sees what an operator starting the real server sees: the reference
executor starts on good options and its own journal and refuses bad options and foreign
journals untouched in one line; and generated mutants of the executor's own checks of its
options, of the journal reader and of the replay's numbering, which no simulation or chaos
history shows, are caught by it (each judged through the mutated executor's refusal, not the
command line's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce.mutation.operator import STARTS, Seen, Start, check, judged
from tests.load import patience

ROOT = Path(__file__).resolve().parents[2]
EXECUTOR = "atmostonce.executor:reference"


def test_the_reference_executor_starts_and_refuses_as_the_operator_must() -> None:
    seen: list[tuple[Start, Seen]] = []
    assert check(EXECUTOR, on_start=lambda start, s: seen.append((start, s))) is None
    assert len(seen) == len(STARTS)
    refused = [s for start, s in seen if start.refused is not None]
    assert refused
    assert all(not s.started and s.code == 2 and not s.changed for s in refused)
    assert any(start.options is not None for start, _ in seen), "options beyond the CLI's"
    assert any(start.journal is not None and start.refused is None for start, _ in seen)


REFUSE = Start("a bad thing", "bad thing")
RUN = Start("a good thing", None)


@pytest.mark.parametrize(("start", "seen", "problem"), [
    (REFUSE, Seen(True, 0, "", False), "the server started"),
    (REFUSE, Seen(False, 1, "Traceback\nTypeError: x", False), "exit 1, not 2"),
    (REFUSE, Seen(False, 2, "one\nbad thing", False), "in one line"),
    (REFUSE, Seen(False, 2, "a worse thing", False), "in one line"),
    (REFUSE, Seen(False, 2, "bad thing", True), "was changed"),
    (RUN, Seen(False, 2, "refused", False), "did not start"),
    (RUN, Seen(False, None, "", False), "did not start"),
    (Start("a call to queue", None, queues="k"), Seen(True, 0, "", True, ({"type": "ask"},)),
     "no first attempt of 'k'"),
])
def test_each_way_a_start_goes_wrong_is_named(start: Start, seen: Seen, problem: str) -> None:
    found = judged(start, seen)
    assert found is not None
    assert problem in found


def test_what_the_operator_must_see_is_accepted() -> None:
    assert judged(REFUSE, Seen(False, 2, "x: bad thing, here\n", False)) is None
    assert judged(RUN, Seen(True, 0, "listening\n", True)) is None
    queued = {"type": "queued", "key": "k", "number": 1}
    assert judged(Start("a call to queue", None, queues="k"),
                  Seen(True, 0, "", True, ({"type": "ask"}, queued))) is None


@pytest.mark.parametrize(("module", "operator", "occurrence", "caught"), [
    ("core.py", "core/ReplaceComparisonOperator_GtE_Gt", 1,
     "a lease as long as the heartbeat timeout: the server started"),
    ("core.py", "core/ReplaceOrWithAnd", 0, "embedded, max_attempts true: the server started"),
    ("reader.py", "core/ReplaceComparisonOperator_NotEq_Lt", 1,
     "an ask whose key sorts before its call's: the refusal does not say"),
    ("reader.py", "core/ExceptionReplacer", 0, "a policy of an unknown effect: exit 1, not 2"),
    ("recovery.py", "core/ReplaceComparisonOperator_NotEq_Lt", 0,
     "a call's first attempt numbered 2: the server started"),
    ("restart.py", "core/ReplaceComparisonOperator_Eq_NotEq", 0,
     "a call asked whose first attempt was never journaled: no first attempt"),
])
def test_a_mutant_of_the_executors_own_checks_is_caught_by_the_operator_stage(
        tmp_path: Path, module: str, operator: str, occurrence: int, caught: str) -> None:
    pytest.importorskip("cosmic_ray")
    from atmostonce.mutation.pipeline import run
    from tests.mutation.test_pipeline import one

    [outcome] = run([one(module, operator, occurrence)], ROOT, EXECUTOR, ["operator"], 1,
                    300 * patience(), tmp_path / "state.jsonl")
    assert outcome.killed_by == "operator", outcome.detail
    assert outcome.detail.startswith(caught), outcome.detail


def test_the_embedding_program_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce.mutation.embedded", str(tmp_path / "j"), EXECUTOR,
         "{not json"], capture_output=True, text=True, timeout=60 * patience(), check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "the options are not JSON" in done.stderr
