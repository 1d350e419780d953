"""What a person reads after a sweep: one row per value of the swept setting (outcome_unknown
and double runs with their intervals, the time from the go-ahead to the record, the wait for a
person, retries, the verdict), then per tool at each value: outcome_unknown, double runs, the
failed records by reason, the time from the go-ahead to the record and the approval wait; every
violation with its replay command. The same as JSON, each row a whole scenario report."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from atmostonce.sim.report import violation_lines
from atmostonce.sim.scenario_report import (
    interval,
    pct,
    reason_legend,
    scenario_json,
    seconds,
)
from atmostonce.sim.scenario_run import SweepRow
from atmostonce.sim.tool_stats import FAILURE_REASONS, Times, ToolTotals, combined

Cell = Callable[[ToolTotals], str | None]
"""A table cell for one tool (or every tool) at one value; None when it has nothing there."""


TITLES = ("outcome_unknown by tool", "double run by tool", "failed by reason",
          "to record p50/p99 s by tool", "approval wait p50/p99 s by tool")
"""The tables by tool (or reason), whose names share one column width."""


def _times(times: Times | None) -> tuple[str, str]:
    return (seconds(times[1]), seconds(times[2])) if times else ("-", "-")


def sweep_text(name: str, rows: Sequence[SweepRow]) -> str:
    first = rows[0].result
    c = first.campaign
    width = max(len(name), *(len(row.value) for row in rows))
    lines = [
        f"atmostonce simulate: scenario {first.spec.name} ({first.spec.path}), sweep of {name}, "
        f"{len(c.seeds)} seeds per value, executor {c.executor}",
        "",
        f"  {'':>{width}} {'':>8} {'outcome_unknown':>22} {'double run':>22} "
        f"{'from go-ahead to record (s)':>31} {'approval wait (s)':>15} {'retries':>9}",
        f"  {name:>{width}} {'calls':>8} {'share [95% interval]':>22} "
        f"{'share [95% interval]':>22} {'p50':>7} {'p99':>7} {'unknown p50':>15} "
        f"{'p50':>7} {'p99':>7} {'per call':>9}  verdict",
    ]
    for row in rows:
        t = combined(row.result.tools)
        p50, p99 = _times(t.time_to_record())
        unknown, _ = _times(t.time_to_unknown())
        wait50, wait99 = _times(t.approval_wait())
        lines.append(
            f"  {row.value:>{width}} {t.calls:>8,} "
            f"{interval(t, t.records['outcome_unknown']):>22} {interval(t, t.double_runs):>22} "
            f"{p50:>7} {p99:>7} {unknown:>15} {wait50:>7} {wait99:>7} "
            f"{t.retries / max(t.calls, 1):>9.4f}  {'pass' if row.result.ok else 'FAIL'}")
    unknown_title, double_title, failed_title, record_title, wait_title = TITLES
    lines += _by_tool(rows, unknown_title, _share(lambda t: t.records["outcome_unknown"]))
    lines += _by_tool(rows, double_title, _share(lambda t: t.double_runs))
    lines += _failed_by_reason(rows, failed_title)
    lines += _by_tool(rows, record_title, _p50_p99(ToolTotals.time_to_record))
    lines += _by_tool(rows, wait_title, _p50_p99(ToolTotals.approval_wait))
    legend = reason_legend(t for row in rows for t in row.result.tools.values())
    lines += ["", *legend] if legend else []
    for row in rows:
        if not row.result.ok:
            lines += ["", f"{name}={row.value}:", *violation_lines(row.result.campaign)]
    verdict = all(row.result.ok for row in rows)
    lines += ["", "to record: from the go-ahead, the first attempt handed to a worker; unknown "
              "p50: the median time from it to an outcome_unknown record; approval wait: from "
              "the ask to the answer or the deadline",
              "verdict: PASS (no violation)" if verdict else
              "verdict: FAIL (a value broke a property; see above)"]
    return "\n".join(lines)


def _share(hits: Callable[[ToolTotals], int]) -> Cell:
    """The share of the tool's calls with `hits`; nothing where none had it."""
    return lambda t: pct(hits(t) / t.calls) if t.calls and hits(t) else None


def _p50_p99(times: Callable[[ToolTotals], Times | None]) -> Cell:
    def cell(t: ToolTotals) -> str | None:
        found = times(t)
        return None if found is None else f"{seconds(found[1])}/{seconds(found[2])}"
    return cell


def _table(rows: Sequence[SweepRow], title: str,
           lines_of: Sequence[tuple[str, Callable[[SweepRow], str | None]]]) -> list[str]:
    """A table with a column per value and a line per (name, cell) that has any cell."""
    filled = [(label, [cell(row) for row in rows]) for label, cell in lines_of]
    filled = [(label, cells) for label, cells in filled if any(c is not None for c in cells)]
    if not filled:
        return []
    names = max(len(title), *(len(label) for label, _ in filled), *(
        len(tool.name) for tool in rows[0].result.spec.tools), *map(len, TITLES)) + 2
    width = max(12, *(len(row.value) + 2 for row in rows),
                *(len(c) + 2 for _, cells in filled for c in cells if c is not None))
    return ["", f"  {title:<{names}}" + "".join(f"{row.value:>{width}}" for row in rows),
            *(f"  {label:<{names}}" + "".join(f"{c or '-':>{width}}" for c in cells)
              for label, cells in filled)]


def _by_tool(rows: Sequence[SweepRow], title: str, cell: Cell) -> list[str]:
    """Per tool that has any, `cell` at each value of the sweep."""
    def of(name: str) -> Callable[[SweepRow], str | None]:
        return lambda row: cell(row.result.tools[name])
    return _table(rows, title,
                  [(tool.name, of(tool.name)) for tool in rows[0].result.spec.tools])


def _failed_by_reason(rows: Sequence[SweepRow], title: str) -> list[str]:
    """Per reason a failed record gives, the share of all calls it ended at each value."""
    def of(reason: str) -> Callable[[SweepRow], str | None]:
        share = _share(lambda t: t.failed[reason])
        return lambda row: share(combined(row.result.tools))
    return _table(rows, title, [(r, of(r)) for r in FAILURE_REASONS])


def sweep_json(name: str, rows: Sequence[SweepRow]) -> dict[str, object]:
    return {
        "verdict": "pass" if all(r.result.ok for r in rows) else "fail",
        "sweep": name,
        "values": [r.value for r in rows],
        "rows": [{"value": r.value, **scenario_json(r.result)} for r in rows],
    }
