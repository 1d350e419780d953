"""`atmostonce verify --engine`: a black-box engine gets the layers that apply to it (the spec's
and the model's own checks, and a chaos run on it); the layers that drive a sans-IO executor are
listed as not checkable, never counted as passed."""

from __future__ import annotations

import json
import subprocess
import sys

from atmostonce import verify
from tests.load import patience

ENGINE = "atmostonce.engines.reference:engine"


def test_an_engine_gets_the_spec_and_model_layers_and_a_chaos_run_on_it() -> None:
    checks = verify.engine_plan(ENGINE)
    assert [(c.layer, c.name) for c in checks] == [
        ("spec", "clause coverage"), ("spec", "CrossHair proofs"),
        ("model", "exhaustive model check"), ("runtime", f"chaos on {ENGINE}")]
    assert set(verify.NOT_FOR_ENGINES) == {"conformance", "simulation"}


def test_layers_that_need_an_executor_are_listed_apart_as_not_checkable() -> None:
    done = subprocess.run([sys.executable, "-m", "atmostonce", "verify", "--engine", ENGINE,
                           "--layers", "spec,conformance", "--json"], capture_output=True,
                          text=True, timeout=600 * patience(), check=False)
    report = json.loads(done.stdout)
    assert [c["layer"] for c in report["checks"]] == ["spec", "spec"]
    assert list(report["not_checkable"]) == ["conformance"]
    assert "sans-IO executor" in report["not_checkable"]["conformance"]
    assert done.returncode == (0 if report["verdict"] == "pass" else 1)
