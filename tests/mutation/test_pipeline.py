"""The mutation pipeline measures verify honestly: a mutant that breaks the executor is killed
by the cheapest stage that sees it, one that changes nothing survives, a result is taken up
again only for the same source, annotations count as equivalent only where nothing evaluates
them, an equivalence argument goes stale when its line changes, and every committed one names
a mutant as it reads (argued equivalents are not tried unless asked)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cosmic_ray")

from atmostonce.mutation.generate import Mutant, executor_modules, mutants
from atmostonce.mutation.pipeline import Job, run, trial_on_ray
from atmostonce.mutation.score import Equivalent, score
from atmostonce.spec.errors import SpecError
from tests.load import patience

ROOT = Path(__file__).resolve().parents[2]
EXECUTOR = "atmostonce.executor:reference"
CHEAP = ["simulation-20", "conformance-5"]


def executor_mutants(name: str) -> list[Mutant]:
    modules = [m for m in executor_modules(ROOT / "atmostonce" / "executor") if m.name == name]
    return list(mutants(modules, ROOT))


def one(name: str, operator: str, occurrence: int) -> Mutant:
    [found] = [m for m in executor_mutants(name)
               if m.operator == operator and m.occurrence == occurrence]
    return found


BREAKS = ("attempts.py", "core/ReplaceBinaryOperator_Add_Sub", 1)
"""`QUEUE_ID + attempt.id` made a subtraction of strings: every poll raises."""
CHANGES_NOTHING = ("attempts.py", "core/ReplaceComparisonOperator_IsNot_NotEq", 1)
"""`attempt.phase is not QUEUED` made `!=`: a plain enum's equality is identity."""


def test_a_mutant_that_breaks_the_executor_is_killed_by_the_cheapest_stage_and_one_that_changes_nothing_survives(  # noqa: E501
        tmp_path: Path) -> None:
    state = tmp_path / "state.jsonl"
    broken, same = one(*BREAKS), one(*CHANGES_NOTHING)
    outcomes = {o.mutant.id: o for o in run([broken, same], ROOT, EXECUTOR, CHEAP, 2,
                                            120 * patience(), state)}
    assert outcomes[broken.id].killed_by == "simulation-20"
    assert "TypeError" in outcomes[broken.id].detail
    assert outcomes[same.id].killed_by is None
    assert (ROOT / "atmostonce" / "executor" / "attempts.py").read_text().count(
        "QUEUE_ID + attempt.id") >= 1, "the checkout itself is never mutated"
    tried: list[str] = []
    again = run([broken, same], ROOT, EXECUTOR, CHEAP, 2, 120 * patience(), state,
                lambda o: tried.append(o.mutant.id))
    assert {o.mutant.id: o.killed_by for o in again} == {
        broken.id: "simulation-20", same.id: None}
    assert len(state.read_text().splitlines()) == 2, "a result is taken up, not tried again"
    longer = run([same], ROOT, EXECUTOR, [*CHEAP, "conformance-7"], 1, 300 * patience(), state)
    assert longer[0].stages == (*CHEAP, "conformance-7"), "a survivor meets the new stages"
    assert longer[0].killed_by is None
    last = json.loads(state.read_text().splitlines()[-1])
    assert last["id"] == same.id
    assert last["seconds"] > outcomes[same.id].seconds


def test_a_result_for_another_version_of_the_module_is_not_taken_up(tmp_path: Path) -> None:
    state = tmp_path / "state.jsonl"
    broken = one(*BREAKS)
    run([broken], ROOT, EXECUTOR, ["simulation-20"], 1, 120 * patience(), state)
    older = Mutant(broken.module, broken.operator, broken.occurrence, broken.line, broken.text,
                   broken.annotation, "0" * 64)
    from atmostonce.mutation.pipeline import load_state

    assert load_state(state)[broken.id].mutant != older


def test_only_a_deferred_annotation_makes_a_mutant_equivalent_by_rule(tmp_path: Path) -> None:
    body = "def f(x: int | None) -> int | None:\n    return x | 1\n"
    deferred = tmp_path / "deferred.py"
    deferred.write_text("from __future__ import annotations\n\n" + body)
    evaluated = tmp_path / "evaluated.py"
    evaluated.write_text(body)
    bitor = "core/ReplaceBinaryOperator_BitOr_Add"
    flags = {(m.module, m.line): m.annotation for m in mutants([deferred, evaluated], tmp_path)
             if m.operator == bitor}
    assert flags == {("deferred.py", 3): True, ("deferred.py", 4): False,
                     ("evaluated.py", 1): False, ("evaluated.py", 2): False}


def test_an_equivalence_whose_line_changed_is_stale_and_the_mutant_counts_again() -> None:
    same = one(*CHANGES_NOTHING)
    argued = Equivalent(same.id, same.text, "a plain enum's equality is identity")
    moved = Equivalent(same.id, same.text + "  # changed", argued.why)
    assert score([same], [], {same.id: argued}).total.equivalent == 1
    counted = score([same], [], {same.id: moved})
    assert counted.stale == [moved]
    assert counted.total.mutants == 0, "without an outcome the mutant is not counted yet"


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "equivalent.toml"
    broken.write_text("[[equivalent]]\nid = 'x'\n")
    for args, says in ((["--stages", "nope"], "unknown stage 'nope'"),
                       (["--equivalent", str(broken)], "needs exactly id, line and why"),
                       (["--module", "nothing-like-it"], "no executor module matches"),
                       (["--processes", "0"], "--processes expects at least 1"),
                       (["--processes", "2", "--ray", "127.0.0.1:1"], "with --ray 127.0.0.1:1"),
                       (["--ray", "127.0.0.1:1", "--module", "attempts.py", "--limit", "1",
                         "--state", str(tmp_path / "s.jsonl")], "nothing answers at")):
        done = subprocess.run([sys.executable, "benchmarks/mutation.py", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=60 * patience(),
                              check=False)
        assert done.returncode == 2, done.stderr
        assert says in done.stderr
        assert done.stderr.count("\n") == 1


def test_the_json_report_has_the_score_and_its_parts(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/mutation.py", "--module", "keys.py", "--stages",
         "simulation-20", "--state", str(tmp_path / "s.jsonl"), "--json"], cwd=ROOT,
        capture_output=True, text=True, timeout=300 * patience(), check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {"score", "killed", "survived", "equivalent", "timeout", "per_module",
            "killed_by_stage", "wall_seconds"} <= set(report)
    assert report["mutants"] == report["killed"] + report["survived"] + report[
        "equivalent"] + report["timeout"]


def test_the_recorded_score_names_the_modules_changed_since(tmp_path: Path) -> None:
    from atmostonce.mutation.measured import measured_lines

    keys = ROOT / "atmostonce" / "executor" / "keys.py"
    now = hashlib.sha256(keys.read_bytes()).hexdigest()
    recorded = {"mutants": 10, "score": 0.9, "killed": 8, "timeout": 1, "survived": 1,
                "equivalent": 0, "date": "2026-12-01", "command": "python benchmarks/mutation.py",
                "per_module": {"atmostonce/executor/keys.py": {"sha256": now},
                               "atmostonce/executor/views.py": {"sha256": "0" * 64}}}
    path = tmp_path / "measured.json"
    path.write_text(json.dumps(recorded))
    first, changed, _ = measured_lines(path)
    assert "score 90.0%" in first
    assert "killed 8, timed out 1, survived 1, equivalent 0" in first
    assert changed == "  changed since: views.py (run it again for their score)"
    assert measured_lines(tmp_path / "none.json") == [
        "generated mutants: no score recorded (python benchmarks/mutation.py --record)"]


def test_a_key_built_without_checking_its_parts_is_killed_by_the_bad_input_probes(
        tmp_path: Path) -> None:
    """Generated, this mutant survived every stage until the conformance layer probed bad
    input (D-2): the model's schedules only ever ask with well-formed ids. The probes stage,
    first and cheapest, kills it; the schedules after it would not."""
    unchecked = one("keys.py", "core/ZeroIterationForLoop", 0)
    [outcome] = run([unchecked], ROOT, EXECUTOR, ["probes", "conformance-5"], 1,
                    120 * patience(), tmp_path / "state.jsonl")
    assert outcome.killed_by == "probes"
    assert outcome.detail.startswith("TOOK BAD INPUT: took bad input: D-2:")


def test_a_survival_counts_only_for_the_checks_it_survived(tmp_path: Path) -> None:
    state = tmp_path / "state.jsonl"
    same = one(*CHANGES_NOTHING)
    [first] = run([same], ROOT, EXECUTOR, ["simulation-20"], 1, 120 * patience(), state)
    assert first.killed_by is None
    assert first.checks
    older = json.loads(state.read_text())
    older["checks"] = "0" * 64
    state.write_text(json.dumps(older) + "\n")
    run([same], ROOT, EXECUTOR, ["simulation-20"], 1, 120 * patience(), state)
    assert len(state.read_text().splitlines()) == 2, "tried again against the new checks"


def test_a_survivor_of_later_stages_is_not_tried_again_by_an_earlier_pass(
        tmp_path: Path) -> None:
    """A whole run taken up again meets its first stages before the later ones; a mutant that
    survived them all survived the first ones too and is not tried again."""
    state = tmp_path / "state.jsonl"
    same = one(*CHANGES_NOTHING)
    run([same], ROOT, EXECUTOR, ["simulation-20"], 1, 120 * patience(), state)
    later = json.loads(state.read_text())
    later["stages"] = ["simulation-20", "operator"]
    state.write_text(json.dumps(later) + "\n")
    [again] = run([same], ROOT, EXECUTOR, ["simulation-20"], 1, 120 * patience(), state)
    assert again.killed_by is None
    assert again.stages == ("simulation-20", "operator")
    assert len(state.read_text().splitlines()) == 1, "not tried again"


def test_a_mutant_of_another_version_of_its_module_is_not_tried_and_not_counted(
        tmp_path: Path) -> None:
    state = tmp_path / "state.jsonl"
    broken = one(*BREAKS)
    older = Mutant(broken.module, broken.operator, broken.occurrence, broken.line, broken.text,
                   broken.annotation, "0" * 64)
    [outcome] = run([older], ROOT, EXECUTOR, ["simulation-20"], 1, 120 * patience(), state)
    assert outcome.killed_by == "untried"
    assert "changed since the mutant" in outcome.detail
    assert not state.exists() or state.read_text() == ""
    counted = score([older], [outcome], {})
    assert counted.untried == [older]
    assert counted.total.mutants == 0


def test_every_argued_equivalence_names_a_mutant_of_the_executor_as_it_reads() -> None:
    from atmostonce.mutation.score import load_equivalents

    made = {m.id: m for m in mutants(executor_modules(ROOT / "atmostonce" / "executor"), ROOT)}
    for name, kind in (("mutation_equivalent.toml", "equivalent"),
                       ("mutation_unobservable.toml", "unobservable")):
        argued = load_equivalents(ROOT / "benchmarks" / name, kind)
        assert [e.id for e in argued.values() if e.id not in made] == []
        assert [e.id for e in argued.values() if e.line != made[e.id].text] == []


def test_an_argued_equivalent_is_not_tried_unless_asked(tmp_path: Path) -> None:
    [first, *_] = executor_mutants("keys.py")
    equivalents = tmp_path / "equivalent.toml"
    equivalents.write_text(f"[[equivalent]]\nid = {json.dumps(first.id)}\n"
                           f"line = {json.dumps(first.text)}\nwhy = \"a test\"\n")
    for extra, tried in (([], False), (["--try-equivalents"], True)):
        state = tmp_path / f"state{len(extra)}.jsonl"
        done = subprocess.run(
            [sys.executable, "benchmarks/mutation.py", "--module", "keys.py", "--stages",
             "probes", "--state", str(state), "--equivalent", str(equivalents), "--json",
             *extra], cwd=ROOT, capture_output=True, text=True, timeout=300 * patience(),
            check=False)
        assert done.returncode == 0, done.stderr
        ids = {json.loads(line)["id"] for line in state.read_text().splitlines()}
        assert (first.id in ids) is tried
        assert json.loads(done.stdout)["equivalent"] == 1


def test_a_survivor_argued_unobservable_stays_a_survivor_counted_apart() -> None:
    from atmostonce.mutation.pipeline import Outcome

    same = one(*CHANGES_NOTHING)
    survived = Outcome(same, None, None, "", 1.0, ("simulation-20",))
    argued = Equivalent(same.id, same.text, "nothing outside the executor shows the phase")
    counted = score([same], [survived], {}, {same.id: argued})
    assert (counted.total.survived, counted.total.unobservable) == (1, 1)
    assert counted.total.score == 0.0, "an argued survivor is not a kill"
    assert counted.as_json()["survivors"] == [
        {"id": same.id, "line": same.line, "text": same.text, "unobservable": True}]
    moved = Equivalent(same.id, same.text + "  # changed", argued.why)
    stale = score([same], [survived], {}, {same.id: moved})
    assert (stale.total.unobservable, stale.stale) == (0, [moved])


def test_the_black_box_run_meets_only_the_stages_that_judge_from_outside(
        tmp_path: Path) -> None:
    from atmostonce.mutation.stages import BLACK_BOX, BY_NAME

    assert BLACK_BOX == ("simulation-20", "operator", "simulation-300", "runtime")
    assert {BY_NAME[name].layer for name in BLACK_BOX} == {"simulation", "runtime"}
    done = subprocess.run(
        [sys.executable, "benchmarks/mutation.py", "--black-box", "--module", "attempts.py",
         "--limit", "6", "--stages", "simulation-20", "--state", str(tmp_path / "s.jsonl"),
         "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=300 * patience(), check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["black_box"] is True
    assert set(report["killed_by_stage"]) <= {"simulation-20", "import", "crash"}
    assert report["killed"] > 0


def test_the_recorded_black_box_score_is_shown_beside_the_other(tmp_path: Path) -> None:
    from atmostonce.mutation.measured import measured_lines

    keys = ROOT / "atmostonce" / "executor" / "keys.py"
    now = hashlib.sha256(keys.read_bytes()).hexdigest()
    figures = {"mutants": 10, "score": 0.9, "killed": 8, "timeout": 1, "survived": 1,
               "equivalent": 0, "date": "2026-12-03", "command": "python benchmarks/mutation.py",
               "per_module": {"atmostonce/executor/keys.py": {"sha256": now, "score": 0.9}}}
    outside = {**figures, "score": 0.7, "killed": 6, "survived": 3, "unobservable": 2,
               "command": "python benchmarks/mutation.py --record --black-box",
               "per_module": {"atmostonce/executor/keys.py": {"sha256": now, "score": 0.7}}}
    path = tmp_path / "measured.json"
    path.write_text(json.dumps({**figures, "black_box": outside}))
    lines = measured_lines(path)
    assert "score 90.0%" in lines[0]
    assert "judged from outside" in lines[1]
    assert "score 70.0%" in lines[1]
    assert "survived 3 of which 2 argued not observable from outside" in lines[1]
    assert lines[2] == "  per module: keys.py 70%"
    path.write_text(json.dumps(figures))
    assert "no black-box score recorded" in measured_lines(path)[-1]


def test_kills_of_argued_survivors_are_folded_into_the_recorded_score_once(
        tmp_path: Path) -> None:
    from atmostonce.mutation.pipeline import Outcome
    from atmostonce.spec.errors import SpecError
    from benchmarks.mutation import fold_argued

    mutant, other = one(*CHANGES_NOTHING), one(*BREAKS)
    sha = hashlib.sha256((ROOT / mutant.module).read_bytes()).hexdigest()
    measured = tmp_path / "measured.json"

    def recorded(unobservable: int) -> None:
        figures = {"mutants": 10, "killed": 6, "timeout": 0, "survived": 2, "equivalent": 2,
                   "unobservable": unobservable, "score": 0.75}
        measured.write_text(json.dumps({"black_box": {
            **figures, "killed_by_stage": {"simulation-20": 6}, "date": "2026-12-04",
            "command": "python benchmarks/mutation.py --record --black-box",
            "per_module": {mutant.module: {**figures, "sha256": sha}}}}))

    def outcome(m: Mutant, stage: str | None) -> Outcome:
        return Outcome(m, stage, None, "", 1.0, ("simulation-20", "operator"))

    recorded(2)
    killed = outcome(mutant, "operator")
    for _ in range(2):
        fold_argued([killed, outcome(other, "simulation-20")], "--argued --record", measured)
    outside = json.loads(measured.read_text())["black_box"]
    assert (outside["killed"], outside["survived"], outside["unobservable"]) == (7, 1, 1)
    assert outside["score"] == 0.875
    assert outside["per_module"][mutant.module]["killed"] == 7
    assert outside["killed_by_stage"] == {"simulation-20": 6, "operator": 1}
    assert outside["killed_after_the_run"] == [mutant.id], "a kill is folded in once"
    assert outside["stages"] == ["simulation-20", "simulation-300", "runtime"]
    again = outcome(one(*BREAKS), "operator")
    fold_argued([again], "--argued --record", measured)
    outside = json.loads(measured.read_text())["black_box"]
    assert outside["killed"] == 8, "a second fold by the same new stage counts too"

    recorded(1)
    fold_argued([killed, outcome(other, None)], "--argued --record", measured)
    outside = json.loads(measured.read_text())["black_box"]
    assert outside["killed"] == 6, "two argued, one survivor recorded: the kill may be a kill"
    recorded(1)
    fold_argued([killed, outcome(other, "operator")], "--argued --record", measured)
    outside = json.loads(measured.read_text())["black_box"]
    assert outside["killed"] == 7, "two argued, both killed: the one survivor is among them"

    recorded(2)
    data = json.loads(measured.read_text())
    data["black_box"]["per_module"][mutant.module]["sha256"] = "another version"
    measured.write_text(json.dumps(data))
    with pytest.raises(SpecError, match="changed since the black-box score was recorded"):
        fold_argued([killed], "--argued", measured)


def test_the_mutated_modules_are_those_the_reference_executor_loads() -> None:
    """A module the reference executor never loads gives only survivors no check could kill
    (the pipe server once did: 150 of them), and one it loads but is left out is never judged."""
    code = ("import sys, atmostonce.executor\n"
            "print(' '.join(sorted(m.rpartition('.')[2] for m in sys.modules\n"
            "    if m.startswith('atmostonce.executor.'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=ROOT).stdout.split()
    mutated = [m.stem for m in executor_modules(ROOT / "atmostonce" / "executor")]
    assert sorted(set(loaded) - {"mutants", "before_upgrade"}) == mutated


def test_on_a_local_ray_the_outcomes_are_those_of_the_trials_here(tmp_path: Path) -> None:
    """Each trial as a Ray task on a copy of the package the Ray worker imports: the same
    stage kills the broken mutant with the same error, the other survives, and both results
    go to the state file as they come."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (the ray extra: pip install -e '.[ray]'; CI "
                    "installs it)")
    state = tmp_path / "state.jsonl"
    broken, same = one(*BREAKS), one(*CHANGES_NOTHING)
    outcomes = {o.mutant.id: o for o in run([broken, same], ROOT, EXECUTOR, ["simulation-20"],
                                            2, 120 * patience(), state, ray="local")}
    assert outcomes[broken.id].killed_by == "simulation-20"
    assert "TypeError" in outcomes[broken.id].detail
    assert outcomes[same.id].killed_by is None
    assert {json.loads(line)["id"] for line in state.read_text().splitlines()} == {
        broken.id, same.id}


def test_a_ray_worker_whose_checks_differ_is_refused_in_one_line() -> None:
    """A survival measured with other checking code would say nothing of this checkout's."""
    job = Job(one(*CHANGES_NOTHING), EXECUTOR, ("simulation-20",), 60.0, "0" * 64, None)
    with pytest.raises(SpecError, match="whose checks differ from this checkout's"):
        trial_on_ray(job)
