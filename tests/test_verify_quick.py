"""Iterating on one's own executor: `verify --quick` runs a bounded subset (conformance at a
small depth with the probes, a few dozen simulation seeds) and says what it skipped; verify
says first which layers judge the executor and which the package; `verify --help` names every
layer and value of --layers; `atmostonce clauses ID` explains the ids verify's output names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from atmostonce import verify
from atmostonce.cli import main
from tests.load import patience

ROOT = Path(__file__).resolve().parent.parent


def test_quick_verify_of_the_skeleton_passes_and_reports_what_it_skipped() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "atmostonce", "verify", "--quick", "--executor",
         "examples.my_executor:factory"], cwd=ROOT, capture_output=True, text=True,
        check=False, timeout=300 * patience())
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "judging the executor: conformance, simulation, runtime"
    assert lines[2].startswith("judging the package itself, the same for every executor: "
                               "spec, model (--quick skips them)")
    for name in verify.QUICK_SKIPS:
        assert any(line.startswith(f"  skipped {name} (") for line in lines), name
    assert f"within depth {verify.QUICK_DEPTH} " in done.stdout
    assert f"{verify.QUICK_SEEDS} chaos seeds" in done.stdout
    assert "verdict: PASS (2 checks, 0 failed)" in done.stdout


def test_quick_plans_only_the_bounded_checks() -> None:
    from atmostonce.executor import reference

    planned = verify.plan("atmostonce.executor:reference", reference, quick=True)
    assert [p.name for p in planned] == ["conformance", "fault simulation"]
    full = verify.plan("atmostonce.executor:reference", reference)
    assert {p.name for p in full} - {p.name for p in planned} == set(verify.QUICK_SKIPS)


def test_quick_json_lists_the_skipped_checks_of_the_chosen_layers(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--quick", "--layers", "spec", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["checks"] == []
    assert set(report["skipped"]) == {"clause coverage (spec)", "CrossHair proofs (spec)"}


def test_verify_names_which_layers_judge_the_executor_and_which_the_package() -> None:
    lines = verify.scope_lines(("spec", "conformance"), quick=False)
    assert lines[0] == "judging the executor: conformance"
    assert lines[1] == "judging the package itself, the same for every executor: spec"
    assert "`atmostonce clauses ID`" in lines[2]
    assert not any("skipped" in line for line in lines)


def test_verify_help_names_every_layer_and_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["verify", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for layer in verify.LAYERS:
        assert f"{layer} (judges the {verify.JUDGES[layer].split(':')[0].split()[-1]}" in text
    assert "of spec, model, conformance, simulation, runtime" in text
    assert "--quick" in text
    assert "atmostonce clauses ID" in text


def test_quick_is_refused_for_a_black_box_engine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--quick", "--engine", "atmostonce.engines.reference:engine"]) == 2
    err = capsys.readouterr().err
    assert "--quick" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("given", ["F-6", "F-7", "D-4", "D-22's", "TC-REC-2", "S-DOUBLE-RUN"])
def test_clauses_id_explains_the_ids_verify_names(
        given: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clauses", given]) == 0
    out = capsys.readouterr().out
    wanted = given.removesuffix("'s")
    assert out.startswith(f"{wanted} ")
    assert out.count("\n") <= 6
    assert "clauses, " not in out


@pytest.mark.parametrize(("given", "says"), [
    ("F-66", "did you mean F-6"),
    ("PEP316", "is no clause, decision, finding or property id"),
])
def test_an_unknown_id_is_one_line_and_exit_2(given: str, says: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["clauses", given]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1
