"""`simulate --scenario --report`'s page: for one run, per tool how its calls ended, its failed
records by reason, the time from the go-ahead to the record and, apart, the wait for a person,
with the call machines coloured by the transitions the histories took and the first failing
seed as a sequence chart; for a sweep, each record's share and each tool's times against the
swept value, and a line per value with its verdict."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from atmostonce.check.history.call_edges import NOT_FROM_HISTORY
from atmostonce.report.counts import layer_counts
from atmostonce.report.page import Chart, Check, Page, Section
from atmostonce.sim.report_page import (
    HISTORY_MEANING,
    UNCOUNTED,
    failed_history,
    failure_charts,
    failure_tables,
)
from atmostonce.sim.scenario_run import ScenarioResult, SweepRow
from atmostonce.sim.stats import RECORDS
from atmostonce.sim.tool_stats import Times, ToolTotals, combined
from atmostonce.spec.protocol import ExecutorFactory

UNIT = "simulated seconds"
SWEEP_NOT_MEASURED = (
    "a sweep runs the scenario once per value, and adding their transitions would mix "
    "settings; run one value with --set NAME=VALUE --report to see its diagrams"
)


def _pct(hits: int, calls: int) -> str:
    return f"{100 * hits / calls:.2f}%" if calls else "-"


def scenario_check(result: ScenarioResult) -> Check:
    """The run as one check of the page: its figures, and each failing seed's replay."""
    c = result.campaign
    t = combined(result.tools)
    details: list[str] = []
    for failure in c.failures[:3]:
        run = failure.run
        details += [f"seed {run.seed}: {line}" for line in run.problems()[:3]]
        details.append(f"replay: {run.replay_command()}")
    return Check(
        f"scenario {result.spec.name}", result.ok,
        f"{len(c.seeds)} seeds, {t.calls:,} tool calls, outcome_unknown "
        f"{_pct(t.records['outcome_unknown'], t.calls)}, double runs "
        f"{_pct(t.double_runs, t.calls)}, {c.totals.sim_seconds:,.0f} simulated seconds; "
        f"{len(c.failures)} failing seeds", tuple(details))


def tool_plots(result: ScenarioResult) -> tuple[Chart, ...]:
    """Per tool: records, failed records by reason, time to record, the wait for a person."""
    from atmostonce.report.plots import records_chart, times_chart
    from atmostonce.report.scenario_plots import reasons_chart

    tools = {tool.name: result.tools[tool.name] for tool in result.spec.tools}
    shown = [Chart("Records per tool", records_chart({n: t.records for n, t in tools.items()}),
                   "How many calls of each tool ended with each record ('none': no record "
                   "when the run ended).")]
    if any(t.records["failed"] for t in tools.values()):
        shown.append(Chart("Failed records by reason, per tool",
                           reasons_chart({n: t.failed for n, t in tools.items()}),
                           "Each failed record by the reason its error gives, as the spec "
                           "words it (the text report's legend quotes each)."))
    times = {n: t.times for n, t in tools.items() if t.times}
    if times:
        shown.append(Chart("Time from go-ahead to record, per tool", times_chart(times, UNIT),
                           "From the first attempt handed to a worker to the record; calls "
                           "no attempt of reached a worker are left out (counts log-scaled "
                           "where there are many)."))
    waits = {n: t.approval_waits for n, t in tools.items() if t.approval_waits}
    if waits:
        shown.append(Chart("Wait for a person, per tool", times_chart(waits, UNIT),
                           "From the ask to the approval's answer or its deadline, for the "
                           "tools that wait for one."))
    return tuple(shown)


def scenario_page(result: ScenarioResult, factory: ExecutorFactory, command: str) -> Page:
    c = result.campaign
    counts = layer_counts("simulation", HISTORY_MEANING, c.totals.taken,
                          dict.fromkeys(UNCOUNTED, NOT_FROM_HISTORY), keep_outside=True)
    failed = failed_history(c, factory)
    section = Section("simulation", (scenario_check(result),), tool_plots(result), counts,
                      counterexamples=() if failed is None else failure_charts(failed),
                      tables=failure_tables(failed))
    spec = result.spec
    return Page(f"atmostonce simulate: scenario {spec.name}", command,
                f"{spec.path}, executor {c.executor}", result.ok, (section,))


def _median(times: Callable[[ToolTotals], Times | None]) -> Callable[[ToolTotals],
                                                                     float | None]:
    def median(t: ToolTotals) -> float | None:
        found = times(t)
        return None if found is None else found[1]
    return median


def sweep_plots(setting: str, rows: Sequence[SweepRow]) -> tuple[Chart, ...]:
    """Each record's share, and per tool outcome_unknown and the median times, by value."""
    from atmostonce.report.scenario_plots import per_tool_chart, shares_chart

    values = [row.value for row in rows]
    every = [combined(row.result.tools) for row in rows]
    shares = {}
    for record in RECORDS:
        line = [t.share(t.records[record]) for t in every]
        shares[record] = [(float(s["share"]), float(s["low"]), float(s["high"])) for s in line]
    shown = [Chart(f"Records against {setting}", shares_chart(setting, values, shares),
                   "Each record's share of all calls at each value, with its 95% interval; "
                   "each panel has its own scale.")]
    names = [tool.name for tool in rows[0].result.spec.tools]

    def by_tool(figure: Callable[[ToolTotals], float | None]
                ) -> dict[str, list[float | None]]:
        return {n: [figure(row.result.tools[n]) for row in rows] for n in names}

    unknown = by_tool(lambda t: 100 * t.records["outcome_unknown"] / t.calls
                      if t.calls and t.records["outcome_unknown"] else None)
    if any(v is not None for line in unknown.values() for v in line):
        shown.append(Chart("outcome_unknown per tool", per_tool_chart(
            setting, values, unknown, "% of its calls"),
            "The share of each tool's calls recorded outcome_unknown, where it had any."))
    shown.append(Chart("Time from go-ahead to record per tool", per_tool_chart(
        setting, values, by_tool(_median(ToolTotals.time_to_record)), f"median, {UNIT}"),
        "The median time from each tool's first attempt handed to a worker to its record."))
    waits = by_tool(_median(ToolTotals.approval_wait))
    if any(v is not None for line in waits.values() for v in line):
        shown.append(Chart("Wait for a person per tool", per_tool_chart(
            setting, values, waits, f"median, {UNIT}"),
            "The median time from the ask to the approval's answer or its deadline."))
    return tuple(shown)


def sweep_page(setting: str, rows: Sequence[SweepRow], factory: ExecutorFactory,
               command: str) -> Page:
    checks = tuple(replace(scenario_check(row.result), name=f"{setting}={row.value}")
                   for row in rows)
    failing = next((row for row in rows if not row.result.ok), None)
    failed = None if failing is None else failed_history(failing.result.campaign, factory)
    section = Section("sweep", checks, sweep_plots(setting, rows), None, SWEEP_NOT_MEASURED,
                      () if failed is None else failure_charts(failed))
    first = rows[0].result
    return Page(f"atmostonce simulate: scenario {first.spec.name}, sweep of {setting}",
                command, f"{first.spec.path}, executor {first.campaign.executor}",
                all(row.result.ok for row in rows), (section,))
