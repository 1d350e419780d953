"""`atmostonce verify`: every layer that applies, run in order, and one verdict.

Each check returns a `CheckResult`; the verdict passes only when every check passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from atmostonce.check import coverage, proofs
from atmostonce.check.protocol import ExecutorFactory


@dataclass
class CheckResult:
    """One check of one layer: whether it held, a one-line summary, and details on failure."""

    layer: str
    name: str
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)
    data: dict[str, object] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "check": self.name,
            "ok": self.ok,
            "summary": self.summary,
            "details": self.details,
            **self.data,
        }


def check_clause_coverage() -> CheckResult:
    """Every clause is named by some code and pinned by some test, and no stray id exists."""
    code = coverage.named_in_code()
    tests = coverage.pinned_by_tests()
    rows = coverage.matrix(code=code, tests=tests)
    missing = [
        f"{row.clause.id}: no {' and no '.join(what)}"
        for row in rows
        if (what := [w for w, refs in (("code", row.code), ("test", row.tests)) if not refs])
    ]
    stray = [f"{cid}: unknown id named at {', '.join(sorted(places))}"
             for cid, places in sorted(coverage.unknown_ids(code, tests).items())]
    covered = len(rows) - len(missing)
    return CheckResult(
        "spec", "clause coverage", not missing and not stray,
        f"{covered}/{len(rows)} clauses named by code and pinned by tests",
        missing + stray,
        {"clauses": len(rows), "covered": covered},
    )


def check_proofs() -> CheckResult:
    """CrossHair confirms every postcondition of the spec over all paths."""
    report = proofs.prove()
    total = len(report.confirmed) + len(report.failed)
    details = [f"{c.where()}: {c.text}: {why}" for c, why in report.failed]
    details += [f"unexpected CrossHair output: {line}" for line in report.unmatched]
    return CheckResult(
        "spec", "CrossHair proofs", report.ok,
        f"{len(report.confirmed)}/{total} postconditions confirmed over all paths "
        f"({report.seconds:.1f} s, analysis kind {proofs.ANALYSIS_KIND})",
        details,
        {"confirmed": len(report.confirmed), "conditions": total, "seconds": report.seconds},
    )


def check_model() -> CheckResult:
    """The exhaustive model check at the default bound: every always-property holds, every
    sometimes-property is witnessed, finding F-6 is established."""
    from atmostonce.model import check

    report = check.run(check.DEFAULT)
    r = report.result
    details = [f"{t.property}: {t.message}" for t in report.violations]
    details += [f"never witnessed: {pid}" for pid in r.unwitnessed]
    details += [f"finding {c.id} does not hold: {c.statement}" for c in report.claims
                if not c.holds]
    if not r.complete:
        details.append(f"incomplete: {r.stopped_reason}")
    return CheckResult(
        "model", "exhaustive check", report.ok,
        f"{r.states:,} states, {r.transitions:,} transitions, depth {r.depth}, "
        f"{r.seconds:.1f} s; {len(r.violations)} violations, {len(r.witnesses)} "
        f"sometimes-properties witnessed; finding F-6 "
        f"{'established' if all(c.holds for c in report.claims) else 'NOT established'}",
        details,
        {"states": r.states, "transitions": r.transitions, "depth": r.depth,
         "seconds": r.seconds, "violations": [t.property for t in report.violations],
         "unwitnessed": r.unwitnessed},
    )


CONFORMANCE_DEPTH = 9
"""Schedules are replayed up to this many model steps: every transition out of every state
within it, each after the state's shortest schedule, once with the fence off and once on."""


def check_conformance(path: str, factory: ExecutorFactory) -> CheckResult:
    """The executor, driven in lockstep with the model through every transition within the
    depth, does only what the model allows and agrees with it on every observable."""
    from atmostonce.check.conformance import replay_schedules
    from atmostonce.model.check import DEFAULT

    details: list[str] = []
    schedules = steps = 0
    seconds = 0.0
    for config in (DEFAULT, DEFAULT.with_(fence=True)):
        result = replay_schedules(config, factory, CONFORMANCE_DEPTH, edges=True)
        schedules += result.schedules
        steps += result.steps
        seconds += result.seconds
        for log, message in result.disagreements[:1]:
            details.append(f"{message} (fence {'on' if config.fence else 'off'})")
            details.append("schedule: " + " -> ".join(log))
        if details:
            break
    return CheckResult(
        "conformance", "model-generated schedules", not details,
        f"{schedules:,} schedules (every transition), {steps:,} steps within depth "
        f"{CONFORMANCE_DEPTH} on "
        f"{path}, {seconds:.1f} s; {'0 disagreements' if not details else 'DISAGREES'}",
        details,
        {"schedules": schedules, "steps": steps, "depth": CONFORMANCE_DEPTH,
         "seconds": seconds, "executor": path},
    )


SIMULATION_SEEDS = 300
"""Seeds of the `chaos` campaign verify runs (every fault kind, swarm subsets per seed)."""


def check_simulation(path: str, factory: ExecutorFactory) -> CheckResult:
    """A seeded fault-simulation campaign: every history is checked against every property."""
    from atmostonce.sim.campaign import campaign

    result = campaign(range(SIMULATION_SEEDS), "chaos", factory, path, shrink_first=1)
    totals = result.totals
    details: list[str] = []
    for failure in result.failures[:1]:
        run = failure.run
        for v in run.violations[:3]:
            details.append(f"{v.property} ({v.key}): {v.message}")
        if run.error:
            details.append(f"error: {run.error}")
        details.append(f"replay: {run.replay_command()}")
        if failure.shrunk is not None:
            shrunk = failure.shrunk
            details.append(f"shrunk from {shrunk.original} faults to {len(shrunk.kept)}: "
                           f"{shrunk.result.replay_command()}")
    return CheckResult(
        "simulation", "fault-simulation campaign", result.ok,
        f"{len(result.seeds)} chaos seeds, {totals.calls:,} tool calls, "
        f"{totals.double_runs} double runs ({totals.documented} of the documented shape), "
        f"{result.wall_seconds:.1f} s; {len(result.failures)} failing seeds",
        details,
        {"seeds": len(result.seeds), "calls": totals.calls, "failing_seeds":
         [f.run.seed for f in result.failures], "seconds": result.wall_seconds},
    )


CHAOS_SECONDS = 25.0
"""Seconds of faults in verify's chaos run; with the start, the drain (at most CHAOS_DRAIN)
and the clean-up the check takes well under a minute."""
CHAOS_DRAIN = 20.0


def check_chaos(path: str, factory: ExecutorFactory) -> CheckResult:
    """A short chaos run on the real runtime (`atmostonce.chaos`): the server runs the executor
    under test while workers are killed, paused and cut off and the server is restarted from
    its journal; the history is checked by the simulator's checkers and no record a client saw
    may be lost. Cut connections are both held and reset (D-12, tests/chaos/test_findings.py)."""
    from atmostonce.chaos.run import ChaosOptions, run_chaos

    result = run_chaos(ChaosOptions(duration=CHAOS_SECONDS, executor=path, pace=2.0,
                                    drain=CHAOS_DRAIN))
    details = [f"{v.property} ({v.key}): {v.message}" for v in result.violations[:3]]
    details += [f"lost {lost.line()}" for lost in result.lost[:3]]
    details += [f"engine error: {error}" for error in result.errors[:3]]
    if details:
        details.append(f"rerun: {result.options.command()}")
    faults = result.faults.summary()
    return CheckResult(
        "runtime", "chaos on the real runtime", result.ok,
        f"{result.stats.calls:,} tool calls in {CHAOS_SECONDS:g} s of faults ({faults}) on "
        f"{path}, {result.seconds:.1f} s; {len(result.violations)} violations, "
        f"{len(result.lost)} lost records",
        details,
        {"calls": result.stats.calls, "faults": result.faults.counts(),
         "violations": [v.property for v in result.violations], "lost_records": len(result.lost),
         "double_runs": len(result.double_runs), "seconds": result.seconds},
    )


Check = Callable[[], CheckResult]
LAYERS = ("spec", "model", "conformance", "simulation", "runtime")


def plan(path: str, factory: ExecutorFactory, layers: tuple[str, ...] = LAYERS
         ) -> list[tuple[str, Check]]:
    """The checks of the chosen layers, in order, each with a name for progress lines."""
    checks: list[tuple[str, str, Check]] = [
        ("spec", "clause coverage", check_clause_coverage),
        ("spec", "CrossHair proofs", check_proofs),
        ("model", "exhaustive model check", check_model),
        ("conformance", "conformance", lambda: check_conformance(path, factory)),
        ("simulation", "fault simulation", lambda: check_simulation(path, factory)),
        ("runtime", "chaos on the real runtime", lambda: check_chaos(path, factory)),
    ]
    return [(name, check) for layer, name, check in checks if layer in layers]


def run(checks: list[tuple[str, Check]], progress: Callable[[str], None]) -> list[CheckResult]:
    results: list[CheckResult] = []
    for name, check in checks:
        progress(name)
        results.append(check())
    return results
