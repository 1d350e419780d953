"""`atmostonce replay SEED --call KEY` prints one call's story: the entries of that call (its
ask, timers, hand-outs, runs, record, snapshot) and none of another's; an unknown key, or
--call with --json, is one line and exit 2."""

from __future__ import annotations

import re

import pytest

from atmostonce.check.history import entries as h
from atmostonce.check.history.call_story import positions_of_call
from atmostonce.cli import main
from atmostonce.executor import reference
from atmostonce.sim.run import run_seed

SEED = 3


def test_one_calls_story_holds_its_entries_and_no_others(
        capsys: pytest.CaptureFixture[str]) -> None:
    run = run_seed(SEED, "chaos", reference, "atmostonce.executor:reference",
                   keep_history=True)
    assert run.history is not None
    entries = run.history.entries
    handed = [e for e in entries if isinstance(e, h.HandedOut)]
    key = handed[len(handed) // 2].key
    assert main(["replay", str(SEED), "--call", key]) == 0
    out = capsys.readouterr().out
    events = [line for line in out.splitlines() if re.match(r"^(>>|  )\s*\d+ ", line)]
    assert len(events) == len(positions_of_call(entries, key)) < len(entries) // 10
    named = set(re.findall(r"\bkey=(\S+)", "\n".join(events)))
    assert named == {key}
    kinds = {line.split()[2] for line in events}
    assert {"CallAsked", "HandedOut", "RunStarted", "RecordPublished"} <= kinds
    attempts = {e.attempt for e in handed if e.key == key}
    for line in events:
        attempt = re.search(r"\battempt=(\S+)", line)
        assert attempt is None or attempt.group(1) in attempts
    assert f"events of call {key} ({len(events)} of {len(entries)}):" in out


@pytest.mark.parametrize(("argv", "says"), [
    (["replay", str(SEED), "--call", "no/such/key"], "--call no/such/key: seed 3 asks no call"),
    (["replay", str(SEED), "--call", "s1/t1/c1", "--json"], "--call narrows the printed"),
])
def test_a_bad_call_is_one_line_and_exit_2(argv: list[str], says: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1
