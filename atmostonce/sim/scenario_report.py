"""What a person reads after a scenario run: per tool, how its calls ended (each record's share
with a 95% Wilson interval), the chance of outcome_unknown and of a double run, time to record
and retries; after a sweep, one row per value; every violation with its replay command. The
same as JSON. Nothing in it depends on the machine, so the same seeds print the same text."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from atmostonce.sim.report import violation_lines
from atmostonce.sim.scenario import ScenarioFile, Tool
from atmostonce.sim.scenario_run import ScenarioResult, SweepRow
from atmostonce.sim.shapes import shapes_json, shapes_line
from atmostonce.sim.tool_stats import OUTCOMES, ToolTotals, combined
from atmostonce.spec.policy import EffectClass, PolicySource

SOURCE = {PolicySource.TOOL_POLICY: "its ToolPolicy",
          PolicySource.FRAMEWORK_METADATA: "framework metadata",
          PolicySource.SESSION_DEFAULT: "the session default",
          PolicySource.FALLBACK: "nothing declared"}
SERVICE = {"none": "writes nothing", "keyed": "drops a repeated key",
           "plain": "applies every write"}


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def _interval(t: ToolTotals, hits: int) -> str:
    s = t.share(hits)
    return f"{_pct(float(s['share'])):>7} [{_pct(float(s['low']))}, {_pct(float(s['high']))}]"


def _seconds(x: float) -> str:
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


def describe_tool(tool: Tool) -> str:
    e = tool.effective
    approval = "waits for approval" if e.requires_approval else "no approval"
    origin = " (MCP)" if tool.from_mcp else ""
    return (f"{e.effect.value} from {SOURCE[e.source]}{origin}, {approval}; its service "
            f"{SERVICE[tool.service.value]}; runs {tool.duration.describe()}, fails "
            f"{_pct(tool.failure_rate)}")


def header(result: ScenarioResult) -> list[str]:
    c = result.campaign
    spec = result.spec
    runs = max(len(c.seeds), 1)
    faults = ", ".join(f"{n / runs:.1f} {what}" for what, n in result.faults.items())
    return [
        f"atmostonce simulate: scenario {spec.name} ({spec.path}), {len(c.seeds)} seeds from "
        f"{c.seeds[0] if c.seeds else 0}, executor {c.executor}",
        f"  {c.totals.calls:,} tool calls, {c.totals.sim_seconds:,.0f} simulated seconds; "
        f"faults per seed while sessions ran: {faults}",
        f"  {shapes_line(c.totals.shapes)}",
    ]


def scenario_text(result: ScenarioResult) -> str:
    lines = header(result)
    for tool in result.spec.tools:
        t = result.tools[tool.name]
        lines += ["", f"{tool.name} ({t.calls:,} calls): {describe_tool(tool)}",
                  *_tool_lines(tool, t)]
    lines += ["", *violation_lines(result.campaign)]
    return "\n".join(lines)


def _tool_lines(tool: Tool, t: ToolTotals) -> list[str]:
    lines = [f"  {'record':<16}{'calls':>7} {'share':>7} 95% interval"]
    possible = {"succeeded", "failed", "none"}
    if tool.effective.requires_approval:
        possible.add("rejected")
    if tool.effective.effect is not EffectClass.READ:
        possible.add("outcome_unknown")  # a read that ran out of attempts records failed
    for outcome in OUTCOMES:
        n = t.records[outcome]
        if n or (outcome in possible and outcome != "none"):
            label = outcome if outcome != "none" else "no record"
            lines.append(f"  {label:<16}{n:>7,} {_interval(t, n)}")
    if not tool.effective.retries_allowed:
        lines.append(f"  {'double run':<16}{t.double_runs:>7,} {_interval(t, t.double_runs)}")
    if t.repeated_effects:
        lines.append(f"  {'write repeated':<16}{t.repeated_effects:>7,} "
                     f"{_interval(t, t.repeated_effects)}")
    times = t.time_to_record()
    timing = (f"time to record p50 {_seconds(times[1])} s, p99 {_seconds(times[2])} s"
              if times else "no call recorded")
    unknown = t.time_to_unknown()
    if unknown:
        timing += f", to outcome_unknown p50 {_seconds(unknown[1])} s"
    per_call = t.retries / t.calls if t.calls else 0.0
    lines.append(f"  {timing}; retries {t.retries:,} ({per_call:.3f} per call)")
    return lines


def sweep_text(name: str, rows: Sequence[SweepRow]) -> str:
    first = rows[0].result
    c = first.campaign
    width = max(len(name), *(len(row.value) for row in rows))
    lines = [
        f"atmostonce simulate: scenario {first.spec.name} ({first.spec.path}), sweep of {name}, "
        f"{len(c.seeds)} seeds per value, executor {c.executor}",
        "",
        f"  {'':>{width}} {'':>8} {'outcome_unknown':>22} {'double run':>22} "
        f"{'seconds to record':>27} {'retries':>9}",
        f"  {name:>{width}} {'calls':>8} {'share [95% interval]':>22} "
        f"{'share [95% interval]':>22} {'p50':>7} {'p99':>7} {'unknown p50':>11} "
        f"{'per call':>9}  verdict",
    ]
    for row in rows:
        t = combined(row.result.tools)
        times = t.time_to_record()
        unknown = t.time_to_unknown()
        lines.append(
            f"  {row.value:>{width}} {t.calls:>8,} {_interval(t, t.records['outcome_unknown']):>22}"
            f" {_interval(t, t.double_runs):>22} {_seconds(times[1]) if times else '-':>7} "
            f"{_seconds(times[2]) if times else '-':>7} "
            f"{_seconds(unknown[1]) if unknown else '-':>11} "
            f"{t.retries / max(t.calls, 1):>9.4f}  {'pass' if row.result.ok else 'FAIL'}")
    lines += _by_tool(rows, "outcome_unknown", lambda t: t.records["outcome_unknown"])
    lines += _by_tool(rows, "double run", lambda t: t.double_runs)
    for row in rows:
        if not row.result.ok:
            lines += ["", f"{name}={row.value}:", *violation_lines(row.result.campaign)]
    verdict = all(row.result.ok for row in rows)
    lines += ["", "unknown p50: the median time from ask to an outcome_unknown record",
              "verdict: PASS (no violation)" if verdict else
              "verdict: FAIL (a value broke a property; see above)"]
    return "\n".join(lines)


def _by_tool(rows: Sequence[SweepRow], what: str, hits: Callable[[ToolTotals], int]
             ) -> list[str]:
    """Per tool that had any, the share of its calls with `what` at each value of the sweep."""
    names = [tool.name for tool in rows[0].result.spec.tools
             if any(hits(row.result.tools[tool.name]) for row in rows)]
    if not names:
        return []
    width = max(12, *(len(row.value) + 2 for row in rows))
    lines = ["", f"  {what + ' by tool':<28}" + "".join(f"{row.value:>{width}}" for row in rows)]
    for name in names:
        cells = []
        for row in rows:
            t = row.result.tools[name]
            cells.append(f"{_pct(hits(t) / t.calls) if t.calls else '-':>{width}}")
        lines.append(f"  {name:<28}" + "".join(cells))
    return lines


def _tool_json(tool: Tool, t: ToolTotals) -> dict[str, object]:
    e = tool.effective
    return {"effect": e.effect.value, "source": e.source.value,
            "requires_approval": e.requires_approval, "service": tool.service.value,
            "from_mcp": tool.from_mcp, **_totals_json(t),
            **({} if not e.retries_allowed else {"double_run": None})}


def scenario_json(result: ScenarioResult) -> dict[str, object]:
    c = result.campaign
    spec = result.spec
    failures = [f.as_json() for f in c.failures]
    return {
        "verdict": "pass" if result.ok else "fail",
        "scenario": _scenario_json(spec),
        "executor": c.executor,
        "seeds": len(c.seeds),
        "first_seed": c.seeds[0] if c.seeds else None,
        "calls": c.totals.calls,
        "simulated_seconds": round(c.totals.sim_seconds, 3),
        "faults": dict(result.faults),
        "shapes": shapes_json(c.totals.shapes),
        "tools": {tool.name: _tool_json(tool, result.tools[tool.name]) for tool in spec.tools},
        "all_tools": _totals_json(combined(result.tools)),
        "failures": failures,
    }


def _totals_json(t: ToolTotals) -> dict[str, object]:
    times = t.time_to_record()
    return {"calls": t.calls, "records": {o: t.share(t.records[o]) for o in OUTCOMES},
            "outcome_unknown": t.share(t.records["outcome_unknown"]),
            "double_run": t.share(t.double_runs),
            "write_repeated": t.share(t.repeated_effects),
            "time_to_record": _times_json(times),
            "time_to_outcome_unknown": _times_json(t.time_to_unknown()),
            "retries": {"total": t.retries, "per_call": t.retries / t.calls if t.calls else 0.0}}


def _times_json(times: tuple[float, float, float] | None) -> dict[str, float] | None:
    return {"mean": times[0], "p50": times[1], "p99": times[2]} if times else None


def _scenario_json(spec: ScenarioFile) -> dict[str, object]:
    return {"name": spec.name, "file": spec.path,
            "settings": dict(spec.settings)}


def sweep_json(name: str, rows: Sequence[SweepRow]) -> dict[str, object]:
    return {
        "verdict": "pass" if all(r.result.ok for r in rows) else "fail",
        "sweep": name,
        "values": [r.value for r in rows],
        "rows": [{"value": r.value, **scenario_json(r.result)} for r in rows],
    }
