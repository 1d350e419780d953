"""A chaos run as a section of the HTML report: its figures, the guarantees only the engine
mapping's own additions keep, the calls recorded outcome_unknown with their keys, records per
effect class, times to record, a Jepsen-style timeline of calls and faults, the call machines'
transitions its history took, and each violation as a sequence chart."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from atmostonce.chaos.nemesis import SERVER
from atmostonce.chaos.result import ChaosResult
from atmostonce.check.history.call_edges import NOT_FROM_HISTORY
from atmostonce.report.counts import layer_counts
from atmostonce.report.page import Chart, Check, Section, Table
from atmostonce.sim.report_page import HISTORY_MEANING, UNCOUNTED, plots

HELD_BY_MAPPING = "Guarantees that hold only through the mapping"
HELD_CAPTION = ("The engine alone does not keep these properties: the adapter, built the way an "
                "application team would build it on this engine, adds what the engine lacks, and "
                "this run judged them with that addition. Build on the engine without it and "
                "they can break.")


def held_by_mapping_table(held: Mapping[str, str]) -> Table | None:
    """The properties a run judged that hold only thanks to the adapter's own additions (its
    `Limits.held_by_mapping`), with how; None when the engine keeps them all itself."""
    if not held:
        return None
    return Table(HELD_BY_MAPPING, ("property", "how it holds"), tuple(sorted(held.items())),
                 HELD_CAPTION)


def chaos_section(result: ChaosResult, check: Check, layer: str = "runtime") -> Section:
    from atmostonce.report.history_chart import violation_chart
    from atmostonce.report.plots import Band, timeline_chart
    from atmostonce.report.timeline import timeline
    from atmostonce.report.unknown_calls import unknown_calls

    totals = result.totals
    lanes, bars, bands = timeline(result.entries)
    t0 = result.entries[0].at if result.entries else 0.0
    bands += [Band(f.start - t0, f.end - t0, "disk" if f.target == SERVER else
                   f"disk ({f.target})")
              for f in result.faults.faults if f.kind == "disk" and f.end is not None]
    shown = (*plots(totals.records, totals.times, "seconds"),
             Chart("Timeline", timeline_chart(
                 lanes, bars, bands, f"seed {result.options.seed}, seconds since the start"),
                   "Each session's calls as bars from ask to record, coloured by record; each "
                   "worker's tool runs (from the effect ledger); faults shaded: crashes and "
                   "cut connections on their worker, server restarts and windows of a failing "
                   "disk (the server's, or the ledger's) across the picture."))
    counterexamples = []
    for v in result.violations[:3]:
        svg, caption = violation_chart(result.entries, v, f"{v.property} on {v.key or 'the run'}")
        counterexamples.append(Chart(v.property, svg,
                                     f"{caption}. Rerun: {result.options.command()}"))
    counts = layer_counts(layer, HISTORY_MEANING, totals.taken,
                          dict.fromkeys(UNCOUNTED, NOT_FROM_HISTORY), keep_outside=True)
    tables = tuple(t for t in (held_by_mapping_table(result.held_by_mapping),
                                unknown_calls(result.entries))
                   if t is not None)
    return Section(layer, (check,), shown, counts, counterexamples=tuple(counterexamples),
                   tables=tables)


def chaos_check(result: ChaosResult) -> Check:
    """The run as one check of the page: its figures and what went wrong."""
    details = [*result.failure_lines(), *(v.line() for v in result.violations[:3]),
               *(f"lost {lost.line()}" for lost in result.lost[:3]),
               *(f"engine error: {error}" for error in result.errors[:3])]
    if details:
        details.append(f"rerun: {result.options.command()}")
    details += [f"not checkable on this engine: {pid}: {why}"
                for pid, why in sorted(result.not_checkable.items())]
    return Check(
        f"chaos on {result.engine}", result.ok,
        f"{result.stats.calls:,} tool calls, faults: {result.faults.summary()}; "
        f"{len(result.violations)} violations, {len(result.lost)} lost records, "
        f"{len(result.double_runs)} double runs, {result.seconds:.1f} s", tuple(details))


def write_chaos_page(result: ChaosResult, path: Path) -> None:
    """Write `chaos --report`'s page."""
    from atmostonce.report.page import Page, write

    write(Page(f"atmostonce chaos: {result.options.engine}", result.options.command(),
               f"{result.engine} under a nemesis", result.ok,
               (chaos_section(result, chaos_check(result)),)), path)
