"""A simulation campaign as a section of the HTML report: its figures, records per effect class,
time-to-record distributions, the call machines' transitions its histories took, and its first
failing seed as a sequence chart and a timeline."""

from __future__ import annotations

from pathlib import Path

from atmostonce.check.history.call_edges import NOT_FROM_HISTORY
from atmostonce.report.counts import layer_counts
from atmostonce.report.page import Chart, Check, Section, Table
from atmostonce.sim.campaign import CampaignResult
from atmostonce.sim.run import RunResult, run_seed
from atmostonce.spec.protocol import ExecutorFactory

UNCOUNTED = ("Attempt", "Worker", "Run", "KeyedLedger", "PlainLedger")
"""The machines a history is not mapped onto (`atmostonce.check.history.call_edges`)."""
HISTORY_MEANING = (
    "how many calls of the histories took the edge (a retry once per attempt after the "
    "first), read off the calls the checker judged"
)


def plots(records: dict[str, dict[str, int]], times: dict[str, list[float]], unit: str
          ) -> tuple[Chart, ...]:
    """Records per effect class and the time from ask to record, as charts."""
    from atmostonce.report.plots import records_chart, times_chart

    shown = [Chart("Records per effect class", records_chart(records),
                   "How many calls of each effect class ended with each record ('none': no "
                   "record when the run ended).")]
    if any(times.values()):
        shown.append(Chart("Time to record", times_chart(times, unit),
                           f"Per effect class, the {unit} from the ask to the record "
                           "(counts log-scaled where there are many)."))
    return tuple(shown)


def failed_history(result: CampaignResult, factory: ExecutorFactory) -> RunResult | None:
    """The first failing seed's run with its history: the shrunk one when it was shrunk."""
    if not result.failures:
        return None
    failure = result.failures[0]
    if failure.shrunk is not None and failure.shrunk.result.history is not None:
        return failure.shrunk.result
    run = failure.run
    if run.origin is not None:
        return run.origin.rerun(factory, run.executor, run.only, True, None)
    return run_seed(run.seed, run.scenario.profile.name, factory, run.executor, run.only,
                    keep_history=True)


def failure_charts(run: RunResult) -> tuple[Chart, ...]:
    """The failing run's first violation as a sequence chart, and its whole timeline."""
    from atmostonce.report.history_chart import violation_chart
    from atmostonce.report.plots import timeline_chart
    from atmostonce.report.timeline import timeline

    if run.history is None:
        return ()
    entries = run.history.entries
    charts: list[Chart] = []
    for v in run.violations[:3]:
        svg, caption = violation_chart(entries, v, f"{v.property} on {v.key or 'the run'}")
        charts.append(Chart(f"Seed {run.seed}: {v.property}", svg,
                            f"{caption}. Replay: {run.replay_command()}"))
    lanes, bars, bands = timeline(entries)
    charts.append(Chart(f"Seed {run.seed}: timeline", timeline_chart(
        lanes, bars, bands, f"seed {run.seed}, simulated time"),
        "Calls as bars per session from ask to record, tool runs per worker, faults shaded."))
    return tuple(charts)


def failure_tables(run: RunResult | None) -> tuple[Table, ...]:
    """The failing run's calls recorded outcome_unknown, with their keys (none: no table)."""
    from atmostonce.report.unknown_calls import unknown_calls

    if run is None or run.history is None:
        return ()
    table = unknown_calls(run.history.entries, f"Seed {run.seed}: calls recorded outcome_unknown")
    return () if table is None else (table,)


def simulation_section(result: CampaignResult, factory: ExecutorFactory,
                       check: Check, layer: str = "simulation") -> Section:
    totals = result.totals
    counts = layer_counts(layer, HISTORY_MEANING, totals.taken,
                          dict.fromkeys(UNCOUNTED, NOT_FROM_HISTORY), keep_outside=True)
    failed = failed_history(result, factory)
    return Section(layer, (check,),
                   plots(totals.records, totals.times, "simulated seconds"), counts,
                   counterexamples=() if failed is None else failure_charts(failed),
                   tables=failure_tables(failed))


def campaign_check(result: CampaignResult) -> Check:
    """The campaign as one check of the page: its figures, and each failing seed's replay."""
    totals = result.totals
    details: list[str] = []
    for failure in result.failures[:3]:
        run = failure.run
        details += [f"seed {run.seed}: {line}" for line in run.problems()[:3]]
        details.append(f"replay: {run.replay_command()}")
    return Check(
        "fault-simulation campaign", result.ok,
        f"{len(result.seeds)} seeds of profile {result.profile}, {totals.calls:,} tool calls, "
        f"{totals.double_runs} double runs ({totals.documented} of the documented shape), "
        f"{totals.sim_seconds:,.0f} simulated seconds in {result.wall_seconds:.1f} s; "
        f"{len(result.failures)} failing seeds", tuple(details))


def write_campaign_page(result: CampaignResult, factory: ExecutorFactory, command: str,
                        path: Path) -> None:
    """Write `simulate --report`'s page."""
    from atmostonce.report.page import Page, write

    section = simulation_section(result, factory, campaign_check(result))
    write(Page(f"atmostonce simulate: {result.executor}", command,
               f"{result.executor}, profile {result.profile}", result.ok, (section,)), path)
