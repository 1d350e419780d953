"""`atmostonce verify`: every layer that applies, run in order, and one verdict.

Each check returns a `CheckResult`; the verdict passes only when every check passed. An executor
under test that raises, or answers outside the protocol, fails the layer that drove it, with the
exception or the wrong value and the step that caused it (`atmostonce.check.executors.guard`); the
other layers still run. A check that stops on an exception of its own fails with it too, so the
verdict is always printed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from atmostonce.check.clauses import coverage, proofs
from atmostonce.fanout.way import SERIAL, Way
from atmostonce.progress import QUIET, Board, Meter
from atmostonce.report.page import Check as ReportCheck
from atmostonce.report.page import Page, Section
from atmostonce.spec.protocol import Executor, ExecutorConfig, ExecutorFactory

if TYPE_CHECKING:
    from atmostonce.chaos.options import ChaosOptions as ChaosOptionsT
    from atmostonce.model.config import ModelConfig as ModelConfigT


@dataclass
class CheckResult:
    """One check of one layer: whether it held, a one-line summary, and details on failure."""

    layer: str
    name: str
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)
    data: dict[str, object] = field(default_factory=dict)
    section: Section | None = None
    """With a report asked for: the layer's part of the HTML page (figures, counts, charts)."""
    coverage: str = ""
    """The input shapes the layer's runs reached (`atmostonce.sim.shapes`), if it runs any."""

    def check(self) -> ReportCheck:
        return ReportCheck(self.name, self.ok, self.summary, tuple(self.details))

    def as_json(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "check": self.name,
            "ok": self.ok,
            "summary": self.summary,
            "details": self.details,
            **self.data,
        }


def check_clause_coverage(meter: Meter = QUIET) -> CheckResult:
    """Every clause is named by some code and pinned by some test, no stray clause id exists, and
    every property id the project's text names is a property."""
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
    stray += [f"{pid}: unknown property id named at {', '.join(sorted(places))}"
              for pid, places in sorted(coverage.unknown_property_ids(
                  coverage.property_ids_named()).items())]
    covered = len(rows) - len(missing)
    return CheckResult(
        "spec", "clause coverage", not missing and not stray,
        f"{covered}/{len(rows)} clauses named by code and pinned by tests",
        missing + stray,
        {"clauses": len(rows), "covered": covered},
    )


def check_proofs(meter: Meter = QUIET) -> CheckResult:
    """CrossHair confirms every postcondition of the spec over all paths."""
    report = proofs.prove()
    total = len(report.confirmed) + len(report.failed)
    details = [f"{c.where()}: {c.text}: {why}" for c, why in report.failed]
    details += [f"unexpected CrossHair output: {line}" for line in report.unmatched]
    return CheckResult(
        "spec", "CrossHair proofs", report.ok,
        f"{len(report.confirmed)}/{total} postconditions confirmed over all paths "
        f"({report.seconds:.1f} s, analysis kind {proofs.ANALYSIS_KIND}: pre- and "
        "postconditions written in the docstrings)",
        details,
        {"confirmed": len(report.confirmed), "conditions": total, "seconds": report.seconds},
    )


def check_model(report: bool = False, meter: Meter = QUIET) -> CheckResult:
    """The exhaustive model check at the default bound: every always-property holds, every
    sometimes-property is witnessed, findings F-6 and F-7 and both choices of D-4 and D-22
    are established."""
    from atmostonce.model import check

    meter.update(0, total=check.states_expected(check.DEFAULT))
    checked = check.run(check.DEFAULT, count=report,
                        progress=check.shown_on(meter) if meter.live else None)
    meter.update(checked.result.states)
    r = checked.result
    details = [f"{t.property}: {t.message}" for t in checked.violations]
    details += [f"never witnessed: {pid}" for pid in r.unwitnessed]
    details += [f"finding {c.id} does not hold: {c.statement}" for c in checked.claims
                if not c.holds]
    if not r.complete:
        details.append(f"incomplete: {r.stopped_reason}")
    result = CheckResult(
        "model", "exhaustive check", checked.ok,
        f"{r.states:,} states, {r.transitions:,} transitions, depth {r.depth}, "
        f"{r.seconds:.1f} s; {len(r.violations)} violations, {len(r.witnesses)} "
        f"sometimes-properties witnessed; findings F-6, F-7 and D-4's and D-22's choices "
        f"{'established' if all(c.holds for c in checked.claims) else 'NOT established'}",
        details,
        {"states": r.states, "transitions": r.transitions, "depth": r.depth,
         "seconds": r.seconds, "violations": [t.property for t in checked.violations],
         "unwitnessed": r.unwitnessed},
    )
    if checked.edge_counts is not None:
        from atmostonce.report.layers import model_section

        result.section = model_section(result.check(), checked.edge_counts)
    return result


CONFORMANCE_DEPTH = 9
"""Schedules are replayed up to this many model steps: every transition out of every state
within it, each after the state's shortest schedule, once with the fence off, once on, and
once with the fence off under D-4's other choice (a cancelled single attempt records failed)."""


def check_conformance(path: str, factory: ExecutorFactory, report: bool = False,
                      meter: Meter = QUIET, depth: int | None = None, way: Way = SERIAL
                      ) -> CheckResult:
    """The executor, driven in lockstep with the model through every transition within the
    depth (fence off and on, and under D-4's other choice, at once when `path` loads `factory`
    again), does only what the model allows and agrees with it on every observable, each time
    judged by the choice of D-4 its configuration declares; then it
    must pass the probes of fresh executors (`atmostonce.check.probes.table`): refuse the bad
    input those schedules never give it, resolve every policy input the way the spec does,
    fence just what D-6 names and show after a restart every record as before."""
    from atmostonce.check.lockstep.parallel import replay_all
    from atmostonce.check.lockstep.state import executor_config
    from atmostonce.check.probes.policies import cases
    from atmostonce.check.probes.table import PROBES, first_problems
    from atmostonce.model.check import DEFAULT

    depth = CONFORMANCE_DEPTH if depth is None else depth
    details: list[str] = []
    schedules = steps = 0
    verdict = "0 disagreements"
    configs = (DEFAULT, DEFAULT.with_(fence=True), DEFAULT.with_(cancel_records_failed=True))
    failing: list[tuple[ModelConfigT, str, list[str], str]] = []
    meter.update(0, note="fence off and on, and D-4's other choice")
    started = time.monotonic()
    replays = replay_all(configs, path, factory, depth,
                         lambda done, total: meter.update(done, total=total), way)
    seconds = time.monotonic() - started
    for config, result in zip(configs, replays, strict=False):
        fence = f"fence {'on' if config.fence else 'off'}"
        if config.cancel_records_failed:
            fence += ", D-4's other choice: a cancel records failed"
        schedules += result.schedules
        steps += result.steps
        for log, message in result.breaches[:1]:
            verdict = "THE EXECUTOR BROKE THE PROTOCOL"
            details.append(f"the executor broke the protocol ({fence}): {message}")
            details += _schedule_lines("schedule so far", config, path, log)
            failing.append((config, fence, log, message))
        for log, message in result.disagreements[:1]:
            verdict = "DISAGREES"
            details.append(f"{message} ({fence})")
            details += _schedule_lines("schedule", config, path, log)
            failing.append((config, fence, log, message))
        if details:
            break
    resolved = ""
    if not details:
        meter.update(note="probes")
        found, details = first_problems(factory, executor_config(DEFAULT))
        verdict = found or verdict
        if found != PROBES[0].verdict:
            resolved = f" and {sum(1 for _ in cases()):,} policy resolutions"
    checked = CheckResult(
        "conformance", "model-generated schedules", not details,
        f"{schedules:,} schedules (every transition), {steps:,} steps within depth "
        f"{depth}{resolved} on {path}, {seconds:.1f} s; {verdict}",
        details,
        {"schedules": schedules, "steps": steps, "depth": depth,
         "seconds": seconds, "executor": path},
    )
    if report:
        checked.section = _conformance_section(checked, configs, failing, depth, factory, path)
    return checked


def check_deep_lockstep(path: str, seed: int, report: bool = False,
                        meter: Meter = QUIET) -> CheckResult:
    """The deep lockstep (`atmostonce.check.lockstep.deep`): Hypothesis programs, derandomized
    by `seed`, drive the executor and the model together at bounds beyond the exhaustive depth
    (three attempts, two calls a turn, restarts while a call waits, heartbeats); a disagreement
    is shrunk to its shortest program, printed as a test to paste, with the command that runs
    the stage again."""
    from atmostonce.check.lockstep.deep import DEEP_EXAMPLES, DEEP_STEPS, program_text, run_deep

    meter.update(0, total=DEEP_EXAMPLES)
    result = run_deep(path, seed, progress=meter.update)
    details: list[str] = []
    verdict = "0 disagreements"
    failure = result.failure
    if failure is not None:
        verdict = "THE EXECUTOR BROKE THE PROTOCOL" if failure.breach else "DISAGREES"
        details = [str(failure), f"shortest program ({len(failure.program)} steps), as a test "
                   f"to paste:\n{program_text(path, failure.program)}",
                   f"replay: atmostonce verify --executor {path} --layers conformance "
                   f"--seed {seed}"]
    checked = CheckResult(
        "conformance", "deep lockstep", failure is None,
        f"{result.programs:,} programs, {result.steps:,} steps (at most {DEEP_STEPS} each; "
        f"3 attempts, 2 calls a turn, restarts while waiting, heartbeats), seed {seed}, "
        f"{result.seconds:.1f} s; {verdict}",
        details,
        {"programs": result.programs, "steps": result.steps, "seed": seed,
         "examples": DEEP_EXAMPLES, "max_steps": DEEP_STEPS, "seconds": result.seconds,
         "executor": path,
         "program": None if failure is None else [list(s) for s in failure.program]},
    )
    if report:
        checked.section = Section("conformance", (checked.check(),), not_measured="the deep "
                                  "lockstep draws its programs at random; its transitions are "
                                  "not counted")
    return checked


def _diverged(config: ModelConfigT, factory: ExecutorFactory, path: str,
              log: list[str]) -> tuple[str, str] | None:
    """The step where the executor left the model, replayed alone: the model's sentence and
    what the executor returned (None when the replay does not reach it)."""
    from atmostonce.check.lockstep import schedule_replay

    if not log:
        return None
    shown = schedule_replay.replay(config, factory, path, schedule_replay.parse(
        schedule_replay.text(log)))
    last = next((s for s in reversed(shown.steps) if s.verdict == schedule_replay.DISAGREES),
                None)
    return None if last is None else (last.model, last.executor)


def _conformance_section(checked: CheckResult, configs: tuple[ModelConfigT, ...],
                         failing: list[tuple[ModelConfigT, str, list[str], str]],
                         depth: int, factory: ExecutorFactory, path: str) -> Section:
    """The layer's part of the report: the edges of every replayed schedule when all of them
    ran, or else the first failing schedule as a sequence chart."""
    from atmostonce.check.lockstep.schedule_counts import schedule_edge_counts
    from atmostonce.report.layers import conformance_section, summed
    from atmostonce.report.schedule_chart import schedule_chart

    charts = tuple(schedule_chart(config, log, f"{message} ({fence})",
                                  _diverged(config, factory, path, log))
                   for config, fence, log, message in failing)
    if failing:
        return conformance_section(checked.check(), None, charts)
    counts = summed(*(schedule_edge_counts(c, depth) for c in configs))
    return conformance_section(checked.check(), counts)


def _schedule_lines(what: str, config: ModelConfigT, path: str, log: list[str]) -> list[str]:
    """A failing schedule as verify prints it (`preamble` explains the notation): the steps,
    and the command that replays just them on the executor; no steps yet means the setup
    (policies, the session, workers connecting) was under way."""
    from atmostonce.check.lockstep import schedule_replay

    if not log:
        return [f"{what}: (setting up: policies, session, workers)"]
    return [f"{what}: {schedule_replay.text(log)}",
            f"replay step by step: {schedule_replay.command(path, config, log)}"]


def preamble(results: list[CheckResult]) -> list[str]:
    """The lines verify prints first: what the schedule notation means, when a check prints
    a schedule."""
    from atmostonce.check.lockstep import schedule_replay
    from atmostonce.model.check import DEFAULT

    if any(line.startswith("schedule") for r in results for line in r.details):
        return schedule_replay.notation(DEFAULT)
    return []


SIMULATION_SEEDS = 300
"""Seeds of the `chaos` campaign verify runs (every fault kind, swarm subsets per seed)."""


def check_simulation(path: str, factory: ExecutorFactory, report: bool = False,
                     meter: Meter = QUIET, seeds: int | None = None, way: Way = SERIAL
                     ) -> CheckResult:
    """A seeded fault-simulation campaign of `seeds` seeds (`SIMULATION_SEEDS` by default),
    run the way `way` says: every history is checked against every property."""
    from atmostonce.sim.campaign import campaign, shown_on
    from atmostonce.sim.shapes import shapes_json, shapes_line

    seeds = SIMULATION_SEEDS if seeds is None else seeds
    meter.update(0, total=seeds)
    result = campaign(range(seeds), "chaos", factory, path, shown_on(meter),
                      shrink_first=1, way=way)
    totals = result.totals
    details: list[str] = []
    idle = totals.never_succeeded() if result.ok else []
    if idle:
        details.append(f"no {', '.join(idle)} call recorded succeeded in {len(result.seeds)} "
                       "seeds, though the workload's tools return nine times in ten "
                       "(TC-REC-SUCC): the executor runs nothing, or records what returned as "
                       "something else")
    for failure in result.failures[:1]:
        run = failure.run
        details.append(f"seed {run.seed} (profile {run.scenario.profile.name}) failed")
        for v in run.violations[:3]:
            details.append(f"{v.property} ({v.key}): {v.message}")
        if run.error:
            details.append(f"executor error: {run.error}")
        details.append(f"replay: {run.replay_command()}")
        if failure.shrunk is not None:
            shrunk = failure.shrunk
            details.append(f"shrunk from {shrunk.original} faults to {len(shrunk.kept)}: "
                           f"{shrunk.result.replay_command()}")
    checked = CheckResult(
        "simulation", "fault-simulation campaign", result.ok and not idle,
        f"{len(result.seeds)} chaos seeds, {totals.calls:,} tool calls, "
        f"{totals.double_runs} double runs ({totals.documented} of the documented shape), "
        f"{result.wall_seconds:.1f} s; {len(result.failures)} failing seeds",
        details,
        {"seeds": len(result.seeds), "calls": totals.calls, "failing_seeds":
         [f.run.seed for f in result.failures], "never_succeeded": idle,
         "seconds": result.wall_seconds,
         "shapes": shapes_json(totals.shapes)},
        coverage=shapes_line(totals.shapes),
    )
    if report:
        from atmostonce.sim.report_page import simulation_section

        checked.section = simulation_section(result, factory, checked.check())
    return checked


CHAOS_SECONDS = 25.0
"""Seconds of faults in verify's chaos run; with the start, the drain (at most CHAOS_DRAIN)
and the clean-up the check takes well under a minute."""
CHAOS_DRAIN = 20.0


def check_chaos(path: str, factory: ExecutorFactory, report: bool = False,
                meter: Meter = QUIET) -> CheckResult:
    """A short chaos run on the real runtime (`atmostonce.chaos`): the server runs the executor
    under test while workers are killed, paused and cut off and the server is restarted from
    its journal; the history is checked by the simulator's checkers and no record a client saw
    may be lost. Cut connections are both held and reset (D-12, tests/chaos/test_findings.py)."""
    from atmostonce.chaos.options import ChaosOptions

    return _chaos("chaos on the real runtime", path,
                  ChaosOptions(duration=CHAOS_SECONDS, executor=path, pace=2.0, min_faults=1,
                               drain=CHAOS_DRAIN), report, meter)


def check_engine(engine: str, report: bool = False, meter: Meter = QUIET) -> CheckResult:
    """The same chaos run on a black-box engine (`atmostonce chaos --engine`): its workers
    killed, paused and cut off and its server restarted; what the engine cannot show evidence
    for is listed as not checkable, never counted as passed."""
    from atmostonce.chaos.options import ChaosOptions

    return _chaos(f"chaos on {engine}", engine,
                  ChaosOptions(duration=CHAOS_SECONDS, engine=engine, pace=2.0, min_faults=1,
                               drain=CHAOS_DRAIN), report, meter)


def _chaos(name: str, subject: str, options: ChaosOptionsT, report: bool = False,
           meter: Meter = QUIET) -> CheckResult:
    from atmostonce.chaos.run import run_chaos
    from atmostonce.sim.shapes import shapes_json, shapes_line

    result = run_chaos(options, meter=meter)
    details = result.failure_lines()
    details += [f"{v.property} ({v.key}): {v.message}" for v in result.violations[:3]]
    details += [f"lost {lost.line()}" for lost in result.lost[:3]]
    details += [f"engine error: {error}" for error in result.errors[:3]]
    if details:
        details.append(f"rerun: {result.options.command()}")
    details += [f"not checkable on this engine: {pid}: {why}"
                for pid, why in sorted(result.not_checkable.items())]
    faults = result.faults.summary()
    ran = (f"the executor under test failed in the server, which stopped the run "
           f"({result.stats.calls:,} tool calls asked; faults: {faults})"
           if result.executor_failures else
           f"{result.stats.calls:,} tool calls in {CHAOS_SECONDS:g} s of faults ({faults})")
    count = len(result.not_checkable)
    unjudged = (f", {count} {'property' if count == 1 else 'properties'} not checkable"
                if result.not_checkable else "")
    checked = CheckResult(
        "runtime", name, result.ok,
        f"{ran} on {subject}, {result.seconds:.1f} s; {len(result.violations)} violations, "
        f"{len(result.lost)} lost records{unjudged}",
        details,
        {"calls": result.stats.calls, "faults": result.faults.counts(),
         "violations": [v.property for v in result.violations], "lost_records": len(result.lost),
         "double_runs": len(result.double_runs), "seconds": result.seconds,
         "executor_failures": [f.as_json() for f in result.executor_failures],
         "not_checkable": dict(sorted(result.not_checkable.items())),
         "kept": None if result.kept is None else str(result.kept),
         "shapes": shapes_json(result.stats.shapes)},
        coverage=shapes_line(result.stats.shapes),
    )
    if report:
        from atmostonce.chaos.report_page import chaos_section

        checked.section = chaos_section(result, checked.check())
    return checked


Check = Callable[[Meter], CheckResult]
"""A check, given the line of the live display it may move on."""
LAYERS = ("spec", "model", "conformance", "simulation", "runtime")


@dataclass(frozen=True)
class Planned:
    """One check of the plan: its layer, its name on the live display, and the check."""

    layer: str
    name: str
    check: Check


NOT_FOR_ENGINES = {
    "conformance": "it replays model schedules on a sans-IO executor through the protocol, and "
                   "a black-box engine is reached only through its adapter",
    "simulation": "it drives a sans-IO executor in simulated time, and a black-box engine runs "
                  "on real processes in real time",
}
"""The layers that do not apply to a black-box engine, and why: `verify --engine` lists them as
not checkable, never as passed."""


def engine_plan(engine: str, layers: tuple[str, ...] = LAYERS, report: bool = False
                ) -> list[Planned]:
    """The checks of the chosen layers that apply to a black-box engine, in order; with
    `report`, each also builds its part of the HTML page."""
    checks = [planned for planned in plan("", _no_factory, layers, report)
              if planned.layer not in NOT_FOR_ENGINES and planned.layer != "runtime"]
    if "runtime" in layers:
        checks.append(Planned("runtime", f"chaos on {engine}",
                              lambda meter: check_engine(engine, report, meter)))
    return checks


def _no_factory(config: ExecutorConfig) -> Executor:
    raise AssertionError("a black-box engine's plan builds no executor")


def plan(path: str, factory: ExecutorFactory, layers: tuple[str, ...] = LAYERS,
         report: bool = False, seed: int = 0, quick: bool = False, way: Way = SERIAL
         ) -> list[Planned]:
    """The checks of the chosen layers, in order; with `report`, each also builds its part of
    the HTML page (`CheckResult.section`); `seed` derandomizes the deep lockstep. `quick`
    keeps only the bounded subset `QUICK_SKIPS` leaves, conformance at `QUICK_DEPTH` and
    `QUICK_SEEDS` simulation seeds. `way` fans the conformance layer's schedules and the
    simulation layer's seeds out."""
    depth, seeds = (QUICK_DEPTH, QUICK_SEEDS) if quick else (CONFORMANCE_DEPTH,
                                                              SIMULATION_SEEDS)
    checks = [
        Planned("spec", "clause coverage", check_clause_coverage),
        Planned("spec", "CrossHair proofs", check_proofs),
        Planned("model", "exhaustive model check",
                lambda meter: check_model(report, meter)),
        Planned("conformance", "conformance",
                lambda meter: check_conformance(path, factory, report, meter, depth, way)),
        Planned("conformance", "deep lockstep",
                lambda meter: check_deep_lockstep(path, seed, report, meter)),
        Planned("simulation", "fault simulation",
                lambda meter: check_simulation(path, factory, report, meter, seeds, way)),
        Planned("runtime", "chaos on the real runtime",
                lambda meter: check_chaos(path, factory, report, meter)),
    ]
    return [planned for planned in checks if planned.layer in layers
            and not (quick and planned.name in QUICK_SKIPS)]


QUICK_DEPTH = 6
"""The conformance depth of `verify --quick`: every transition within six model steps (the
full run goes to `CONFORMANCE_DEPTH`), then the probes."""
QUICK_SEEDS = 40
"""The simulation seeds of `verify --quick` (the full run: `SIMULATION_SEEDS`)."""
QUICK_SKIPS = {
    "clause coverage": "judges the package, not the executor",
    "CrossHair proofs": "judges the package, not the executor",
    "exhaustive model check": "judges the package, not the executor",
    "deep lockstep": "Hypothesis programs beyond the exhaustive depth take minutes",
    "chaos on the real runtime": "a run on real processes takes about a minute",
}
"""What `verify --quick` leaves out, by check, and why; it prints them."""

JUDGES = {
    "spec": "the package: every clause has code and tests, the spec's contracts are proved",
    "model": "the package: the model keeps every property at the default bound",
    "conformance": "the executor: it does what the model does on every schedule within a "
                   "depth, passes the probes and the deep lockstep",
    "simulation": "the executor: seeded fault campaigns in simulated time",
    "runtime": "the executor: a chaos run with real processes, SIGKILL and restarts",
}
"""What each layer judges: the executor under test, or the package itself (the same for every
executor); verify names it first and `verify --help` lists it."""


def scope_lines(layers: tuple[str, ...], quick: bool) -> list[str]:
    """The lines verify prints first for an executor: which chosen layers judge it and which
    judge the package, and with `quick` what the bounded run leaves out."""
    executor = [layer for layer in layers if JUDGES[layer].startswith("the executor")]
    package = [layer for layer in layers if layer not in executor]
    lines = [f"judging the executor: {', '.join(executor) or 'no layer chosen'}"]
    if package:
        lines.append(f"judging the package itself, the same for every executor: "
                     f"{', '.join(package)}{' (--quick skips them)' if quick else ''}")
    lines.append("ids such as TC-REC-2 (a clause of the page), D-4 (a decision the spec makes) "
                 "or F-6 (a finding): `atmostonce clauses ID` prints what one means")
    if quick:
        lines.append(f"quick: conformance at depth {QUICK_DEPTH} (full: {CONFORMANCE_DEPTH}) "
                     f"with the probes, {QUICK_SEEDS} simulation seeds (full: "
                     f"{SIMULATION_SEEDS})")
        lines += [f"  skipped {name}: {why}" for name, why in quick_skipped(layers).items()]
    return lines


def quick_skipped(layers: tuple[str, ...]) -> dict[str, str]:
    """The checks of the chosen layers that `verify --quick` leaves out, each with its layer,
    and why."""
    layer_of = {planned.name: planned.layer for planned in plan("", _no_factory)}
    return {f"{name} ({layer_of[name]})": why for name, why in QUICK_SKIPS.items()
            if layer_of[name] in layers}


def run(checks: list[Planned], shown: Board | None = None) -> list[CheckResult]:
    """Run every check in order, each on its own line of `shown` (none by default); one that
    stops on an exception fails with it (`stopped`)."""
    results: list[CheckResult] = []
    for planned in checks:
        meter = QUIET if shown is None else shown.meter(f"{planned.layer}: {planned.name}",
                                                        unit=UNITS.get(planned.name, UNITS.get(
                                                            planned.layer, "")))
        try:
            results.append(planned.check(meter))
        except Exception as error:
            results.append(stopped(planned, error))
        meter.finish(None if results[-1].ok else "FAILED")
    return results


UNITS = {"model": "states", "conformance": "schedules", "deep lockstep": "programs",
         "simulation": "seeds", "runtime": "s"}
"""What each layer's (or check's, by name) line of the live display counts."""


def stopped(planned: Planned, error: Exception) -> CheckResult:
    """The result of a check that stopped on an exception: failed, with the exception's type,
    message and the place it was raised."""
    from atmostonce.check.executors.guard import raised

    message = " ".join(str(error).split())
    return CheckResult(planned.layer, planned.name, False,
                       f"the check stopped on {type(error).__name__}: {message}",
                       [f"the check {raised(error)}"], {"stopped": type(error).__name__})


def report_page(subject: str, command: str, results: list[CheckResult],
                unjudged: dict[str, str]) -> Page:
    """The HTML report's page of a verify run: a section per layer, in order, with what its
    checks built (`plan(..., report=True)`); a layer that does not apply says why."""
    from atmostonce.report.layers import not_checkable, spec_section

    sections: list[Section] = []
    for layer in LAYERS:
        if layer in unjudged:
            sections.append(not_checkable(layer, unjudged[layer]))
            continue
        ran = [r for r in results if r.layer == layer]
        if layer == "spec" and ran:
            sections.append(spec_section(tuple(r.check() for r in ran)))
            continue
        sections += [r.section if r.section is not None else Section(
            layer, (r.check(),), not_measured=f"the check stopped before it measured: "
            f"{r.summary}") for r in ran]
    return Page(f"atmostonce verify: {subject}", command, f"{subject} against the Tool Calls "
                "specification", all(r.ok for r in results), tuple(sections))
