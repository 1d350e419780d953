"""What a person reads after a campaign or a replay: a table of outcomes per effect class, the
double runs and their shape, and every violation with its seed and the command that replays
it; and the same as JSON."""

from __future__ import annotations

from collections.abc import Sequence

from atmostonce.check.history.call_story import keys_in, positions_of_call
from atmostonce.check.history.entries import Entry, describe
from atmostonce.sim.campaign import CampaignResult
from atmostonce.sim.run import RunResult
from atmostonce.sim.shapes import shapes_line
from atmostonce.sim.stats import EFFECTS, RECORDS, Totals
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import Kind, of_kind

SOMETIMES = tuple(p.id for p in of_kind(Kind.SOMETIMES))


def campaign_json(result: CampaignResult) -> dict[str, object]:
    totals = result.totals
    data = totals.as_json()
    violations = [
        {"seed": f.run.seed, "profile": result.profile, "property": v.property,
         "call": v.key, "message": v.message, "positions": list(v.positions),
         "replay": f.run.replay_command()}
        for f in result.failures for v in f.run.violations
    ]
    errors = [
        {"seed": f.run.seed, "profile": result.profile, "error": f.run.error,
         "replay": f.run.replay_command()}
        for f in result.failures if f.run.error is not None
    ]
    return {
        "verdict": "pass" if result.ok else "fail",
        "profile": result.profile,
        "executor": result.executor,
        "seeds": len(result.seeds),
        "first_seed": result.seeds[0] if result.seeds else None,
        "calls": totals.calls,
        "seconds": round(result.wall_seconds, 4),
        "calls_per_second": round(totals.calls / result.wall_seconds, 1)
        if result.wall_seconds > 0 else 0.0,
        "cpu_seconds": round(result.cpu_seconds, 4),
        "calls_per_cpu_second": round(result.calls_per_second, 1),
        "simulated_seconds": data["simulated_seconds"],
        "violations": violations,
        "errors": errors,
        "failures": [f.as_json() for f in result.failures],
        "double_runs": data["double_runs"],
        "records": data["records"],
        "retries": data["retries"],
        "time_to_record": data["time_to_record"],
        "witnessed": data["witnessed"],
        "unwitnessed": unwitnessed(totals),
        "server_restarts": data["server_restarts"],
        "shapes": data["shapes"],
    }


def campaign_text(result: CampaignResult) -> str:
    t = result.totals
    lines = [
        f"atmostonce simulate: {len(result.seeds)} seeds, profile {result.profile}, "
        f"executor {result.executor}",
        f"  {t.calls:,} tool calls in {result.wall_seconds:.2f} s "
        f"({t.calls / max(result.wall_seconds, 1e-9):,.0f} calls/s; "
        f"{result.calls_per_second:,.0f} per CPU second), {t.sim_seconds:,.0f} simulated "
        f"seconds ({t.sim_seconds / max(result.wall_seconds, 1e-9):,.0f}x real time), "
        f"{t.restarts} server restarts",
        f"  {shapes_line(t.shapes)}",
        "",
        *records_table(t),
        "",
        *_retries(t),
        *_double_runs(t),
        "",
        *violation_lines(result),
    ]
    return "\n".join(lines)


def records_table(t: Totals) -> list[str]:
    """Records per effect class, counts and shares; shared with the chaos report."""
    columns = [*RECORDS, "none"]
    head = f"  {'records per effect class':<24}" + "".join(f"{c:>17}" for c in columns)
    lines = [head]
    for effect in EFFECTS:
        row = t.records.get(effect, {})
        total = sum(row.values())
        if not total:
            continue
        cells = "".join(
            f"{row[c]:>9,} {100 * row[c] / total:5.1f}%" if row.get(c) else
            f"{'-':>17}" for c in columns)
        lines.append(f"  {effect:<24}{cells}")
    return lines


def retries_line(t: Totals) -> str:
    """Attempts beyond a call's first, by effect class; shared with the chaos report."""
    retries = ", ".join(f"{e} {n:,}" for e, n in sorted(t.retries.items())) or "none"
    return f"  retries (attempts beyond a call's first): {retries}"


def _retries(t: Totals) -> list[str]:
    lines = [retries_line(t),
             "  time from ask to record, seconds (mean / median / 99th percentile):"]
    for effect, (mean, p50, p99) in sorted(t.time_to_record().items()):
        lines.append(f"    {effect:<22} {mean:7.2f} {p50:7.2f} {p99:7.2f}")
    return lines


def _double_runs(t: Totals) -> list[str]:
    other = t.double_runs - t.documented
    return [
        f"  double runs of single-attempt tools: {t.double_runs} "
        f"({t.documented} with the documented shape: a cancelled or restart-lost run still "
        f"going while a later call of the tool ran; {other} of another shape; "
        f"{t.fenced} with the fence on)",
        f"  sometimes-properties witnessed: {len(t.witnessed)} of {len(SOMETIMES)}"
        + (f"; not seen: {', '.join(missing)}" if (missing := unwitnessed(t)) else ""),
    ]


def unwitnessed(t: Totals) -> list[str]:
    """The sometimes-properties no run of the campaign witnessed: what it was too narrow for."""
    return sorted(set(SOMETIMES) - t.witnessed)


def violation_lines(result: CampaignResult) -> list[str]:
    """The verdict, and each failed seed with its problems, replay command and shrunk
    schedule; shared with the scenario report."""
    if result.ok:
        return ["verdict: PASS (no violation)"]
    lines = [f"verdict: FAIL ({len(result.failures)} of {len(result.seeds)} seeds broke a "
             "property)"]
    for f in result.failures:
        lines.append(f"  seed {f.run.seed}:")
        problems = f.run.problems()
        lines += [f"    {line}" for line in problems[:5]]
        if len(problems) > 5:
            lines.append(f"    ... and {len(problems) - 5} more")
        lines.append(f"    replay: {f.run.replay_command()}")
        if f.shrunk is not None:
            s = f.shrunk
            lines.append(f"    shrunk to {len(s.kept)} of {s.original} faults "
                         f"({s.tests} reruns), still failing with {s.property}:")
            lines += [f"      [{i}] {fault.describe()}"
                      for i, fault in zip(s.kept, s.result.scenario.faults, strict=True)]
            lines.append(f"    replay: {s.result.replay_command()}")
    return lines


def _indexes(run: RunResult) -> tuple[int, ...]:
    """Each fault's index in the seed's whole schedule, as `--faults` takes it."""
    return run.only if run.only is not None else tuple(range(len(run.scenario.faults)))


def replay_json(run: RunResult) -> dict[str, object]:
    assert run.history is not None
    scn = run.scenario
    return {
        "verdict": "pass" if run.ok else "fail",
        "seed": run.seed,
        "profile": scn.profile.name,
        "executor": run.executor,
        "fault_kinds": [k.value for k in scn.kinds],
        "faults": [f.describe() for f in scn.faults],
        "fence": scn.config.fence,
        "calls": run.stats.calls,
        "events": [describe(e) for e in run.history.entries],
        "violations": [{"property": v.property, "call": v.key, "message": v.message,
                        "positions": list(v.positions)} for v in run.violations],
        "error": run.error,
        "replay": run.replay_command(),
    }


def only_call(entries: Sequence[Entry], call: str, seed: int) -> list[int]:
    """The positions of call `call`'s story; SpecError when the seed asks no such call."""
    shown = positions_of_call(entries, call)
    if not shown:
        asked = keys_in(entries)
        some = ", ".join(asked[:3]) + (", ..." if len(asked) > 3 else "")
        raise SpecError(f"--call {call}: seed {seed} asks no call with that key (it asks "
                        f"{len(asked)}: {some or 'none'})")
    return shown


def replay_text(run: RunResult, call: str | None = None) -> str:
    """The replay of one seed: its workload and faults, its history, its verdict; with `call`
    (a key), only the entries of that call's story (`atmostonce.check.history.call_story`)."""
    assert run.history is not None
    scn = run.scenario
    w = scn.workload
    lines = [
        f"seed {run.seed}, profile {scn.profile.name}, executor {run.executor}",
        f"  workload: {len(w.sessions)} sessions, {w.workers} workers, tools "
        f"{', '.join(t.name for t in w.tools)}; fence {'on' if scn.config.fence else 'off'}",
        f"  fault kinds: {', '.join(k.value for k in scn.kinds) or 'none'}",
        "  faults:" if scn.faults else "  faults: none",
        *(f"    [{i}] {f.describe()}" for i, f in zip(_indexes(run), scn.faults, strict=True)),
        "events:",
    ]
    marked = {p for v in run.violations for p in v.positions}
    shown = range(len(run.history.entries)) if call is None else \
        only_call(run.history.entries, call, run.seed)
    if call is not None:
        lines[-1] = f"events of call {call} ({len(shown)} of {len(run.history.entries)}):"
    for i in shown:
        lines.append(f"{'>>' if i in marked else '  '}{i:6d} {describe(run.history.entries[i])}")
    if run.ok:
        lines.append(f"verdict: PASS ({run.stats.calls} calls, no violation)")
    else:
        lines.append(f"verdict: FAIL ({len(run.violations)} violations"
                     f"{', and the executor raised' if run.error else ''})")
        lines += [f"  {line}" for line in run.problems()]
    lines.append(f"replay: {run.replay_command()}")
    return "\n".join(lines)
