"""What a person reads after a chaos run, and the same as one JSON object: the operations, the
faults by kind, the records per effect class (the simulator's statistics,
`atmostonce.sim.stats`), the double runs and whether each has the documented shape, lost
records, every violation with the entries it involves and the command that reruns it, and a
failure of the executor under test with the server log's line and where the logs are kept."""

from __future__ import annotations

from atmostonce.chaos.nemesis import NemesisKind
from atmostonce.chaos.result import ChaosResult
from atmostonce.check.history.entries import ReconcileRan, describe
from atmostonce.sim.report import SOMETIMES, records_table, retries_line, unwitnessed
from atmostonce.sim.shapes import shapes_line
from atmostonce.spec.properties import PROPERTIES

SHOWN = 10
"""Violations the text report details; JSON has them all."""


def chaos_json(result: ChaosResult) -> dict[str, object]:
    o = result.options
    obs = result.obs
    totals = result.totals.as_json()
    return {
        "verdict": "pass" if result.ok else "fail",
        "seed": o.seed,
        "duration": o.duration,
        "workers": o.workers,
        "nemesis": [k.value for k in o.nemesis],
        "fence": o.fence,
        "engine": o.engine,
        "executor": o.executor,
        "engine_description": result.engine,
        "seconds": round(result.seconds, 3),
        "operations": sum(obs.operations.values()),
        "operations_by_kind": dict(sorted(obs.operations.items())),
        "unanswered": obs.unavailable,
        "calls": result.stats.calls,
        "faults": result.faults.counts(),
        "engine_events": result.faults.consequences(),
        "disk_windows": result.faults.disk_windows(),
        "server_restarts": len(result.faults.restarts),
        "records": totals["records"],
        "retries": totals["retries"],
        "time_to_record": totals["time_to_record"],
        "double_runs": [{"tool": d.tool, "first": d.first, "second": d.second,
                         "documented_shape": d.documented, "fence": d.fence}
                        for d in result.double_runs],
        "violations": [{"property": v.property, "call": v.key, "message": v.message,
                        "positions": list(v.positions),
                        "entries": [describe(result.entries[p]) for p in v.positions
                                    if p < len(result.entries)],
                        "rerun": o.command()} for v in result.violations],
        "lost_records": [lost.as_json() for lost in result.lost],
        "errors": result.errors,
        "executor_failures": [failure.as_json() for failure in result.executor_failures],
        "kept": None if result.kept is None else str(result.kept),
        "drained": result.drained,
        "reconcile": _reconcile(result),
        "properties": {"judged": judged(result),
                       "not_checkable": dict(sorted(result.not_checkable.items())),
                       "held_by_mapping": dict(sorted(result.held_by_mapping.items()))},
        "witnessed": sorted(result.witnessed),
        "unwitnessed": unwitnessed(result.totals),
        "shapes": totals["shapes"],
        "history_entries": len(result.entries),
        "notes": result.notes,
        "pids": result.pids,
        "rerun": o.command(),
    }


def _reconcile(result: ChaosResult) -> dict[str, int]:
    runs = [e for e in result.entries if isinstance(e, ReconcileRan)]
    sends = result.obs.sends
    return {"runs": len(runs), "crashed": sum(1 for r in runs if r.crashed),
            "sends": len(sends), "unanswered_sends": sum(1 for s in sends if s.accepted is None)}


def chaos_text(result: ChaosResult) -> str:
    o = result.options
    obs = result.obs
    t = result.totals
    kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(obs.operations.items()))
    faults = result.faults.summary()
    own = result.faults.consequences()
    rec = _reconcile(result)
    lines = [
        f"atmostonce chaos: {o.duration:g}s, {o.workers} workers, nemesis "
        f"{','.join(k.value for k in o.nemesis) or 'none'}, seed {o.seed}, fence "
        f"{'on' if o.fence else 'off'} ({result.seconds:.1f}s in all)",
        f"  engine: {result.engine or o.engine}",
        f"  operations: {sum(obs.operations.values()):,} session API calls ({kinds}); "
        f"{obs.unavailable:,} went unanswered (lost connection, restarting server) and were "
        "asked again",
        f"  faults injected: {faults}; workers that stopped themselves when their lease ran "
        f"out (D-12): {own.get('exit', 0)}; server deaths not injected: "
        f"{own.get('server-died', 0)}"
        + (f"; disk windows by target: {_windows(result.faults.disk_windows())}; servers "
           f"that stopped on a disk fault and were started again: {own.get('disk-exit', 0)}, "
           f"ledgers: {own.get('ledger-disk-exit', 0)}" if NemesisKind.DISK in o.nemesis
           else ""),
        *(f"  {note}" for note in result.notes),
        f"  reconcile: {rec['runs']} runs ({rec['crashed']} died after a send), "
        f"{rec['sends']} reports sent",
        "",
        f"  {t.calls:,} tool calls",
        f"  {shapes_line(t.shapes)}",
        *records_table(t),
        retries_line(t),
        "",
        *_double_runs(result),
        f"  sometimes-properties witnessed: {len(result.witnessed)} of {len(SOMETIMES)}",
        *_properties(result),
        "",
        *_lost(result),
        *_violations(result),
        *(f"  engine error: {error}" for error in result.errors),
        *(f"  {line}" for line in result.failure_lines()),
        f"verdict: {'PASS' if result.ok else 'FAIL'} ({len(result.violations)} violations, "
        f"{len(result.lost)} lost records, {len(result.errors)} engine errors, "
        f"{len(result.executor_failures)} failures of the executor under test; "
        f"{len(result.entries):,} history entries checked)"
        + (f"; {len(result.held_by_mapping)} of the judged properties hold only through the "
           f"mapping's own additions ({', '.join(sorted(result.held_by_mapping))}: see above)"
           if result.held_by_mapping else ""),
    ]
    if not result.ok:
        lines.append(f"rerun: {o.command()}")
    return "\n".join(lines)


def judged(result: ChaosResult) -> list[str]:
    """The ids of the properties the run judged: all but those the engine cannot show."""
    return [pid for pid in PROPERTIES if pid not in result.not_checkable]


def _properties(result: ChaosResult) -> list[str]:
    """The judged properties and, apart, those not checkable on this engine with the reason."""
    lines = [f"  properties judged: {len(judged(result))} of {len(PROPERTIES)}"]
    if result.not_checkable:
        lines.append(f"  not checkable on this engine: {len(result.not_checkable)} (never "
                     "counted as passed)")
        lines.extend(f"    {pid}: {why}" for pid, why in sorted(result.not_checkable.items()))
    if result.held_by_mapping:
        lines.append(f"  judged, but held only through the mapping's own additions, not by the "
                     f"engine alone: {len(result.held_by_mapping)}")
        lines.extend(f"    {pid}: {why}" for pid, why in sorted(result.held_by_mapping.items()))
    return lines


def _double_runs(result: ChaosResult) -> list[str]:
    runs = result.double_runs
    documented = sum(1 for d in runs if d.documented)
    lines = [f"  double runs of single-attempt tools: {len(runs)} ({documented} with the "
             "documented shape: a run the engine gave up on still going while a later call of "
             f"the tool ran; {len(runs) - documented} of another shape)"]
    for d in runs[:SHOWN]:
        shape = "documented shape" if d.documented else "NOT the documented shape"
        lines.append(f"    {d.tool}: {d.first} still running when {d.second} ran ({shape})")
    return lines


def _lost(result: ChaosResult) -> list[str]:
    if not result.lost:
        return ["  lost records: none"]
    lines = [f"  lost records: {len(result.lost)} (acknowledged, then gone)"]
    for lost in result.lost[:SHOWN]:
        lines.append(f"    {lost.line()}")
        lines.extend(f"      #{p} {describe(result.entries[p])}" for p in lost.positions
                     if p < len(result.entries))
    return lines


def _violations(result: ChaosResult) -> list[str]:
    if not result.violations:
        return ["  violations: none"]
    lines = [f"  violations: {len(result.violations)}"]
    for v in result.violations[:SHOWN]:
        lines.append(f"    {v.line()}")
        for p in v.positions:
            if p < len(result.entries):
                lines.append(f"      #{p} {describe(result.entries[p])}")
    if len(result.violations) > SHOWN:
        lines.append(f"    ... and {len(result.violations) - SHOWN} more (--json lists all)")
    return lines


def _windows(counts: dict[str, int]) -> str:
    return ", ".join(f"{target} {n}" for target, n in counts.items()) or "none"
