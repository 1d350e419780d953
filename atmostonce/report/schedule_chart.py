"""A conformance schedule the executor failed on, as a sequence chart of the model's steps."""

from __future__ import annotations

from collections.abc import Sequence

from atmostonce.model.config import ModelConfig
from atmostonce.report.page import Chart


def schedule_chart(config: ModelConfig, log: Sequence[str], problem: str,
                   diverged: tuple[str, str] | None = None) -> Chart:
    """The chart of the schedule up to the step the executor got wrong; the caption names the
    problem and the steps, as `verify` prints them. `diverged` is that step's two sides, the
    model's sentence and what the executor returned, drawn and told side by side."""
    from atmostonce.report.charts import chart_of_schedule

    steps = " -> ".join(log) if log else "(setting up: policies, session, workers)"
    if not log:
        return Chart("Disagreement while setting up", "", f"{problem}; schedule: {steps}")
    model, executor = diverged or ("", "")
    chart = chart_of_schedule(config, log, f"conformance: {problem}", executor)
    sides = (f" At step {len(log)} the model: {model}. The executor: {executor}."
             if diverged else "")
    return Chart(f"Conformance disagreement after {len(log)} steps", chart.svg(),
                 f"{problem}; schedule: {steps}.{sides}")
