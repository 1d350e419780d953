"""What a person reads after a scenario run: per tool, how its calls ended (each record's share
with a 95% Wilson interval, failed and rejected split by the reason their error gives), the
chance of outcome_unknown and of a double run, the time from the go-ahead to the record, the
wait for a person apart, and retries; every violation with its replay command. The same as
JSON. Nothing in it depends on the machine, so the same seeds print the same text."""

from __future__ import annotations

from collections.abc import Iterable

from atmostonce.sim.report import violation_lines
from atmostonce.sim.scenario import ScenarioFile, Tool
from atmostonce.sim.scenario_run import ScenarioResult
from atmostonce.sim.shapes import shapes_json, shapes_line
from atmostonce.sim.tool_stats import (
    FAILURE_REASONS,
    OUTCOMES,
    REJECT_REASONS,
    UNNAMED,
    Times,
    ToolTotals,
    combined,
)
from atmostonce.spec.policy import EffectClass, PolicySource
from atmostonce.spec.records import FailureKind, RejectReason, failure_text, reject_text

SOURCE = {PolicySource.TOOL_POLICY: "its ToolPolicy",
          PolicySource.FRAMEWORK_METADATA: "framework metadata",
          PolicySource.SESSION_DEFAULT: "the session default",
          PolicySource.FALLBACK: "nothing declared"}
SERVICE = {"none": "writes nothing", "keyed": "drops a repeated key",
           "plain": "applies every write"}


def pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def interval(t: ToolTotals, hits: int) -> str:
    s = t.share(hits)
    return f"{pct(float(s['share'])):>7} [{pct(float(s['low']))}, {pct(float(s['high']))}]"


def seconds(x: float) -> str:
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


def describe_tool(tool: Tool) -> str:
    e = tool.effective
    approval = "waits for approval" if e.requires_approval else "no approval"
    origin = " (MCP)" if tool.from_mcp else ""
    return (f"{e.effect.value} from {SOURCE[e.source]}{origin}, {approval}; its service "
            f"{SERVICE[tool.service.value]}; runs {tool.duration.describe()}, fails "
            f"{pct(tool.failure_rate)}")


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
    legend = reason_legend(result.tools.values())
    lines += ["", *legend] if legend else []
    lines += ["", *violation_lines(result.campaign)]
    return "\n".join(lines)


LABEL = 24
"""The width of a record's (or, indented, a reason's) name in a tool's table."""


def _tool_lines(tool: Tool, t: ToolTotals) -> list[str]:
    lines = [f"  {'record':<{LABEL}}{'calls':>7} {'share':>7} 95% interval"]
    possible = {"succeeded", "failed", "none"}
    if tool.effective.requires_approval:
        possible.add("rejected")
    if tool.effective.effect is not EffectClass.READ:
        possible.add("outcome_unknown")  # a read that ran out of attempts records failed
    reasons = {"failed": t.failed, "rejected": t.rejected}
    for outcome in OUTCOMES:
        n = t.records[outcome]
        if n or (outcome in possible and outcome != "none"):
            label = outcome if outcome != "none" else "no record"
            lines.append(f"  {label:<{LABEL}}{n:>7,} {interval(t, n)}")
            for reason, hits in reasons.get(outcome, {}).items():
                if hits:
                    lines.append(f"    {reason:<{LABEL - 2}}{hits:>7,} {interval(t, hits)}")
    if not tool.effective.retries_allowed:
        lines.append(f"  {'double run':<{LABEL}}{t.double_runs:>7,} "
                     f"{interval(t, t.double_runs)}")
    if t.repeated_effects:
        lines.append(f"  {'write repeated':<{LABEL}}{t.repeated_effects:>7,} "
                     f"{interval(t, t.repeated_effects)}")
    times = t.time_to_record()
    timing = (f"from go-ahead to record p50 {seconds(times[1])} s, p99 {seconds(times[2])} s"
              if times else "no call recorded after a go-ahead")
    unknown = t.time_to_unknown()
    if unknown:
        timing += f", to outcome_unknown p50 {seconds(unknown[1])} s"
    per_call = t.retries / t.calls if t.calls else 0.0
    lines.append(f"  {timing}; retries {t.retries:,} ({per_call:.3f} per call)")
    wait = t.approval_wait()
    if wait is not None:
        ends = ", ".join(f"{end} {n:,}" for end, n in t.approval_ends.items() if n)
        lines.append(f"  approval wait p50 {seconds(wait[1])} s, p99 {seconds(wait[2])} s "
                     f"({ends})")
    elif tool.effective.requires_approval:
        lines.append("  approval wait: no wait ended")
    return lines


def reason_legend(totals: Iterable[ToolTotals]) -> list[str]:
    """The error text each failed or rejected reason that occurred stands for, as the spec
    words it."""
    seen = list(totals)
    lines = []
    for reason in FAILURE_REASONS:
        if reason != UNNAMED and any(t.failed[reason] for t in seen):
            lines.append(f"  {reason}: {failure_text(FailureKind(reason))}")
    for reason in REJECT_REASONS:
        if reason != UNNAMED and any(t.rejected[reason] for t in seen):
            lines.append(f"  {reason}: {reject_text(RejectReason(reason))}")
    if any(t.failed[UNNAMED] or t.rejected[UNNAMED] for t in seen):
        lines.append(f"  {UNNAMED}: the record's error opens with none of the texts above")
    return ["reasons, by the error their record gives:", *lines] if lines else []


def _tool_json(tool: Tool, t: ToolTotals) -> dict[str, object]:
    e = tool.effective
    return {"effect": e.effect.value, "source": e.source.value,
            "requires_approval": e.requires_approval, "service": tool.service.value,
            "from_mcp": tool.from_mcp, **totals_json(t),
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
        "all_tools": totals_json(combined(result.tools)),
        "failures": failures,
    }


def totals_json(t: ToolTotals) -> dict[str, object]:
    """A tool's (or every tool's) figures; times in seconds, shares with their interval."""
    return {"calls": t.calls, "records": {o: t.share(t.records[o]) for o in OUTCOMES},
            "failed_by_reason": {r: t.share(n) for r, n in t.failed.items()},
            "rejected_by_reason": {r: t.share(n) for r, n in t.rejected.items()},
            "outcome_unknown": t.share(t.records["outcome_unknown"]),
            "double_run": t.share(t.double_runs),
            "write_repeated": t.share(t.repeated_effects),
            "time_from_go_ahead_to_record": _times_json(t.time_to_record()),
            "time_from_go_ahead_to_outcome_unknown": _times_json(t.time_to_unknown()),
            "recorded_without_go_ahead": t.no_go_ahead,
            "approval_wait": _times_json(t.approval_wait()),
            "approval_ends": dict(t.approval_ends),
            "retries": {"total": t.retries, "per_call": t.retries / t.calls if t.calls else 0.0}}


def _times_json(times: Times | None) -> dict[str, float] | None:
    return {"mean": times[0], "p50": times[1], "p99": times[2]} if times else None


def _scenario_json(spec: ScenarioFile) -> dict[str, object]:
    return {"name": spec.name, "file": spec.path,
            "settings": dict(spec.settings)}
