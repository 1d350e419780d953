"""Model counterexamples, witnesses and conformance schedules become sequence charts whose
messages say, lane by lane and in order, what happened."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from atmostonce.check.lockstep.conformance import replay_schedules
from atmostonce.cli import main
from atmostonce.executor import mutants as executor_mutants
from atmostonce.model.check import DEFAULT, run
from atmostonce.model.config import ModelConfig, parse_tools
from atmostonce.model.trace import config_from_json, config_json
from atmostonce.report.charts import Chart, chart_of_schedule, chart_of_trace, parse_schedule
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PropertyId
from atmostonce.spec.step_kinds import StepKind

pytest.importorskip("matplotlib")


def _saved(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    out = tmp_path / "traces.json"
    main(["check", *args, "--out", str(out)])
    traces: list[dict[str, Any]] = json.loads(out.read_text())
    return traces


def _rows(chart: Chart) -> list[tuple[str, str, str]]:
    return [(m.sender, m.receiver, m.text) for m in chart.messages]


def _parses(chart: Chart) -> None:
    assert ET.fromstring(chart.svg()).tag.endswith("svg")


@pytest.mark.clause("D-5", "D-12")
def test_a_model_mutants_counterexample_becomes_a_chart(tmp_path: Path) -> None:
    trace = _saved(tmp_path, "--mutant", "second_worker")[0]
    chart = chart_of_trace(trace)
    assert chart.lanes == ("agent", "executor", "worker 0", "worker 1", "ledger")
    assert chart.title.startswith("counterexample of A-ONE-WORKER: call 0: attempts were "
                                  "handed to a worker 2 times")
    assert _rows(chart) == [
        ("agent", "executor", "ask read (call 0)"),
        ("executor", "executor", "journal: call 0 attempt 1 handed to worker 0"),
        ("executor", "worker 0", "go-ahead: call 0 attempt 1"),
        ("worker 0", "worker 0", "crashes"),
        ("executor", "executor", "heartbeat timeout: worker 0 lost"),
        ("executor", "executor", "journal: call 0 attempt 1 handed to worker 1"),
        ("executor", "worker 1", "go-ahead: call 0 attempt 1"),
    ]
    assert [m.time for m in chart.messages] == [1, 2, 2, 3, 4, 5, 5]
    _parses(chart)


@pytest.mark.clause("TC-AMO-3", "D-4", "D-6")
def test_the_double_run_witness_becomes_a_chart(tmp_path: Path) -> None:
    traces = _saved(tmp_path, "--tools", "non_idempotent_write+approval", "--crashes", "0",
                    "--partitions", "0", "--restarts", "0", "--policy-changes", "0",
                    "--reconcile-crashes", "0")
    witness = next(t for t in traces if t["property"] == PropertyId.S_DOUBLE_RUN)
    chart = chart_of_trace(witness)
    assert chart.lanes == ("agent", "people", "executor", "worker 0", "worker 1", "ledger")
    tool = "non_idempotent_write+approval"
    assert _rows(chart) == [
        ("agent", "executor", f"ask {tool} (call 0)"),
        ("executor", "people", "call 0 needs approval"),
        ("people", "executor", "approve call 0"),
        ("executor", "executor", "journal: call 0 attempt 1 handed to worker 0"),
        ("executor", "worker 0", "go-ahead: call 0 attempt 1"),
        ("worker 0", "worker 0", "starts call 0's tool"),
        ("executor", "worker 0", "cancel call 0 (timed out)"),
        ("executor", "agent", "call 0: outcome_unknown"),
        ("agent", "executor", f"ask {tool} again (call 1)"),
        ("executor", "people", "call 1 needs approval"),
        ("people", "executor", "approve call 1"),
        ("executor", "executor", "journal: call 1 attempt 1 handed to worker 1"),
        ("executor", "worker 1", "go-ahead: call 1 attempt 1"),
        ("worker 1", "worker 1", "starts call 1's tool"),
    ]
    _parses(chart)


def test_the_default_check_s_witness_replays_too() -> None:
    """The witness `atmostonce check` prints at its default bound, built without the CLI."""
    config = DEFAULT.with_(crashes=0, partitions=0, restarts=0, policy_changes=0,
                           reconcile_crashes=0, tools=parse_tools("non_idempotent_write"))
    report = run(config, with_findings=False)
    assert report.double_run is not None
    chart = chart_of_trace(report.double_run.as_json())
    assert _rows(chart)[-1] == ("worker 1", "worker 1", "starts call 1's tool")


@pytest.mark.clause("D-5")
def test_a_conformance_disagreement_s_schedule_becomes_a_chart() -> None:
    config = ModelConfig(workers=2, calls=1, reasks=0, crashes=1, partitions=0, restarts=0,
                         timeouts=0, faults=1, policy_changes=0, reconcile_crashes=0,
                         tools=parse_tools("read"))
    result = replay_schedules(config, executor_mutants.second_worker, depth=6)
    schedule, problem = result.disagreements[0]
    assert schedule == ["ask(0)", "hand(0, 0)", "crash(0)", "detect(0)"]
    chart = chart_of_schedule(config, schedule, problem)
    assert chart.title == problem
    assert chart.lanes == ("agent", "executor", "worker 0", "worker 1", "ledger")
    assert _rows(chart) == [
        ("agent", "executor", "ask read (call 0)"),
        ("executor", "executor", "journal: call 0 attempt 1 handed to worker 0"),
        ("executor", "worker 0", "go-ahead: call 0 attempt 1"),
        ("worker 0", "worker 0", "crashes"),
        ("executor", "executor", "heartbeat timeout: worker 0 lost"),
        ("executor", "executor", "call 0: retry, attempt 2 queued"),
    ]
    _parses(chart)


def test_results_writes_and_held_results_have_their_own_messages() -> None:
    config = ModelConfig(workers=1, calls=1, reasks=0, crashes=0, partitions=1, restarts=0,
                         timeouts=0, faults=1, policy_changes=0, reconcile_crashes=0,
                         tools=parse_tools("idempotent_write"))
    schedule = ["ask(0)", "hand(0, 0)", "go(0, 0)", "apply(0, 0)", "disconnect(0)",
                "finish_ok(0, 0)", "reconnect(0)"]
    rows = _rows(chart_of_schedule(config, schedule, "held"))
    assert rows[4:] == [
        ("worker 0", "ledger", "write call 0's effect"),
        ("worker 0", "worker 0", "loses its connection"),
        ("worker 0", "worker 0", "call 0: tool returned; result held (cut off)"),
        ("worker 0", "executor", "reconnects"),
        ("executor", "agent", "call 0: succeeded"),
    ]


def test_trace_config_round_trips() -> None:
    config = DEFAULT.with_(fence=True, ledger="key", tools=parse_tools("read,unclassified"))
    assert config_from_json(config_json(config)) == config


@pytest.mark.parametrize(("trace", "says"), [
    ({"format": "other"}, "not an atmostonce-trace/1 trace"),
    ({"format": "atmostonce-trace/1", "config": {"workers": 1}}, "a trace's config lacks"),
    ({"format": "atmostonce-trace/1", "config": config_json(DEFAULT),
      "steps": [{"action": "go", "call": 0, "worker": 0}]},
     "trace step 1 .* is not a step the model allows"),
])
def test_bad_traces_are_refused_in_one_line(trace: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecError, match=says):
        chart_of_trace(trace)


@pytest.mark.parametrize(("schedule", "says"), [
    (["hand 0"], "not a schedule step: 'hand 0'"),
    (["go(0, 0)"], r"schedule step 1 \(go\(0, 0\)\) is not a step the model allows"),
])
def test_bad_schedules_are_refused_in_one_line(schedule: list[str], says: str) -> None:
    with pytest.raises(SpecError, match=says):
        chart_of_schedule(DEFAULT, schedule, "t")


def test_schedule_steps_parse_as_model_labels() -> None:
    assert parse_schedule(["reconcile", "crash(1)", "hand(0, 1)"]) == [
        (StepKind.RECONCILE, -1, -1), (StepKind.CRASH, 1, -1), (StepKind.HAND, 0, 1)]


def test_a_disagreements_chart_shows_the_executors_commands_beside_the_models_step() -> None:
    from atmostonce.report.schedule_chart import schedule_chart
    from atmostonce.verify import _diverged

    config = ModelConfig(workers=2, calls=1, reasks=0, crashes=1, partitions=0, restarts=0,
                         timeouts=0, faults=1, policy_changes=0, reconcile_crashes=0,
                         tools=parse_tools("read"))
    result = replay_schedules(config, executor_mutants.second_worker, depth=6)
    schedule, problem = result.disagreements[0]
    diverged = _diverged(config, executor_mutants.second_worker, "second_worker", schedule)
    assert diverged is not None
    model, executor = diverged
    assert model
    assert executor
    chart = chart_of_schedule(config, schedule, problem, executor)
    assert _rows(chart)[-1] == ("executor", "executor", f"the executor instead: {executor}")
    shown = schedule_chart(config, schedule, problem, diverged)
    assert f"At step 4 the model: {model}. The executor: {executor}." in shown.caption
