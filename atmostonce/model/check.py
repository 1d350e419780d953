"""One model check as a user runs it: explore, build the traces, establish findings F-6 and
F-7 and both choices of D-4 and D-22, and report in words or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from atmostonce.model import findings, mutants
from atmostonce.model.choices import ModelChoices
from atmostonce.model.config import ModelConfig
from atmostonce.model.edge_counts import EdgeKey, count_edges
from atmostonce.model.explorer import Explorer, Progress, Result
from atmostonce.model.parallel import ParallelExplorer
from atmostonce.model.por import REDUCTIONS
from atmostonce.model.system import System
from atmostonce.model.trace import Trace, build, config_json
from atmostonce.model.visited import AUTO_EXACT_LIMIT, MODES, describe, missed_probability
from atmostonce.progress import Meter
from atmostonce.spec.clauses import FindingId
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PropertyId

DEFAULT = ModelConfig(calls=1, faults=2)
"""The default bound: two workers, every effect class, one call and one re-ask, two attempts,
two faults (at most one crash, one connection loss, one restart, while an attempt is out or a
call waits for approval, one time-out), one policy change and one reconcile crash: enough for
every sometimes-property to be witnessed."""
DEFAULT_REDUCTION = "none"
"""Partial-order reduction is off unless asked for: measured in `benchmarks/explore.py`."""
DEFAULT_STATES = 465_946
"""The default bound's distinct states (tests/model/test_check.py pins it): the total the live
display counts towards, so that `check` and `verify` show the time left."""


def states_expected(config: ModelConfig, max_states: int | None = None) -> int | None:
    """How many states exploring `config` reaches, when known before: the default bound's
    count, or `max_states` when that is fewer; None for any other bound."""
    known = DEFAULT_STATES if config == DEFAULT else None
    if max_states is None:
        return known
    return max_states if known is None else min(known, max_states)


def shown_on(meter: Meter) -> Progress:
    """The explorer's progress as a line of the live display: distinct states, and the
    transitions and depth reached."""
    def progress(states: int, transitions: int, depth: int, seconds: float) -> None:
        meter.update(states, note=f"{transitions:,} transitions, depth {depth}")

    return progress


@dataclass
class CheckReport:
    config: ModelConfig
    result: Result
    violations: list[Trace] = field(default_factory=list)
    double_run: Trace | None = None
    claims: list[findings.Claim] = field(default_factory=list)
    edge_counts: dict[EdgeKey, int] | None = None
    """With `run(count=True)`: per component edge, the explored transitions taking it."""
    reduction: str = "none"
    """The reduction the exploration used (`por` runs on one process only)."""
    reduction_asked: str = "none"

    @property
    def ok(self) -> bool:
        return self.result.ok and all(c.holds for c in self.claims)

    def as_json(self) -> dict[str, Any]:
        r = self.result
        system_config = config_json(self.config)
        return {
            "ok": self.ok,
            "config": system_config,
            "states": r.states,
            "transitions": r.transitions,
            "depth": r.depth,
            "seconds": round(r.seconds, 3),
            "states_per_second": round(r.states_per_second),
            "quiescent_states": r.quiescent,
            "processes": r.processes,
            "visited": r.visited,
            "reduction": self.reduction,
            "missed_probability": (missed_probability(r.states) if r.visited == "fingerprint"
                                   else 0.0),
            "complete": r.complete,
            "stopped": r.stopped_reason,
            "violations": [
                {"property": t.property, "message": t.message,
                 "steps": [s.action for s in t.steps], "trace": t.render().splitlines()}
                for t in self.violations
            ],
            "unwitnessed": r.unwitnessed,
            "witnessed": sorted(r.witnesses),
            "coverage": {
                "edges_fired": len(r.fired),
                "never_fired": [list(e) for e in r.never_fired],
                "actions": r.action_counts,
            },
            "double_run": None if self.double_run is None else {
                "steps": [s.action for s in self.double_run.steps],
                "trace": self.double_run.render().splitlines(),
            },
            "findings": [
                {"id": c.id, "statement": c.statement, "holds": c.holds,
                 "reachable": c.reachable, "states": c.states,
                 "config": config_json(c.config),
                 **({"trace": c.trace.render().splitlines()} if c.id in SHOWN_TRACES
                    and c.trace is not None else {})}
                for c in self.claims
            ],
        }


SHOWN_TRACES = (FindingId.F_7 + "a",)
"""Claims whose shortest trace the report shows: F-7a, the failed record a write lands after."""


def choices_for(config: ModelConfig) -> ModelChoices:
    return mutants.get(config.mutant).choices() if config.mutant else ModelChoices()


def with_mutant(config: ModelConfig, name: str) -> ModelConfig:
    mutant = mutants.get(name)
    return replace(config, mutant=mutant.name, **mutant.config)  # type: ignore[arg-type]


def run(config: ModelConfig, *, progress: Progress | None = None, stop_at_first: bool = True,
        max_states: int | None = None, with_findings: bool = True,
        count: bool = False, processes: int = 1, visited: str = "auto",
        reduction: str = DEFAULT_REDUCTION) -> CheckReport:
    """Explore `config`'s model (stopping after `max_states` states, at least 1, when given),
    build its traces and establish finding F-6 unless it is a mutant's model; with `count`,
    count how often each component edge is taken as well (`edge_counts`). `processes` above 1
    explores over that many processes (`parallel`); `visited` is how seen states are kept
    (`visited`; `auto` on several processes: exactly for a bound known to fit, as the
    default bound does, fingerprints otherwise); `reduction` is `por` for partial-order
    reduction (`por`; one process only: several processes explore without it) or `none`."""
    if max_states is not None and max_states < 1:
        raise SpecError(f"max_states must be at least 1, got {max_states}")
    if processes < 1:
        raise SpecError(f"processes must be at least 1, got {processes}")
    if visited not in MODES:
        raise SpecError(f"visited must be one of {', '.join(MODES)}, got {visited!r}")
    if count and processes > 1:
        raise SpecError("counting edges needs one process")
    if reduction not in REDUCTIONS:
        raise SpecError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    system = System(config, choices_for(config))
    explorer: Explorer | ParallelExplorer
    if processes > 1:
        known = states_expected(config)
        fingerprints = visited == "fingerprint" or (
            visited == "auto" and (known is None or known > AUTO_EXACT_LIMIT))
        explorer = ParallelExplorer(system, processes, stop_at_first=stop_at_first,
                                    max_states=max_states, progress=progress,
                                    fingerprints=fingerprints)
    else:
        explorer = Explorer(system, stop_at_first=stop_at_first, max_states=max_states,
                            progress=progress, visited="exact" if count else visited,
                            reduction="none" if count else reduction)
    result = explorer.run()
    report = CheckReport(config, result)
    report.reduction = reduction if processes == 1 and not count else "none"
    report.reduction_asked = reduction
    if count:
        assert isinstance(explorer, Explorer)
        report.edge_counts = count_edges(system, explorer.states)
    report.violations = [build(explorer, v, "counterexample") for v in result.violations]
    witness = result.witnesses.get(PropertyId.S_DOUBLE_RUN)
    if witness is not None:
        report.double_run = build(explorer, witness, "witness")
    if with_findings and not config.mutant:
        report.claims = findings.establish()
    return report


def render(report: CheckReport) -> str:
    r = report.result
    lines = [
        f"model check: {report.config.describe()}",
        f"  {r.states:,} distinct states, {r.transitions:,} transitions, depth {r.depth}, "
        f"{r.seconds:.1f} s ({r.states_per_second:,.0f} states/s"
        + (f" on {r.processes} processes" if r.processes > 1 else "")
        + f"), {r.quiescent:,} quiescent states",
    ]
    if r.visited == "fingerprint":
        lines.append(f"  {describe(r.visited, r.states)}")
    if report.reduction == "por":
        lines.append("  partial-order reduction: ample sets (the counts are of the reduced "
                     "graph; every verdict is the unreduced one's)")
    elif report.reduction_asked == "por":
        lines.append("  partial-order reduction off: it runs on one process, without edge "
                     "counts")
    if not r.complete:
        lines.append(f"  INCOMPLETE: {r.stopped_reason}")
    if r.violations:
        lines.append(f"  {len(r.violations)} propert{'y' if len(r.violations) == 1 else 'ies'} "
                     "violated; shortest counterexample:")
        for trace in report.violations:
            lines.append("")
            lines.extend("  " + line for line in trace.render().splitlines())
    else:
        lines.append("  every always-property holds"
                     + (" on every reachable state" if r.complete else " so far"))
    if r.complete:
        witnessed = len(r.witnesses)
        if r.unwitnessed:
            lines.append(f"  NEVER WITNESSED ({len(r.unwitnessed)}): {', '.join(r.unwitnessed)}"
                         " -- the model is too narrow for these bounds")
        else:
            lines.append(f"  all {witnessed} sometimes-properties witnessed")
    for edge in r.never_fired:
        lines.append(f"  warning: transition {edge[0]}.{edge[2]} from {edge[1]} never fired")
    if report.double_run is not None:
        lines.append("")
        lines.append("  The page's one exception, as the model reaches it:")
        lines.extend("  " + line for line in report.double_run.render().splitlines())
    if report.claims:
        lines.append("")
        lines.append("  Findings F-6 (decision D-6) and F-7 (D-4's other choice, D-20), and "
                     "the two choices of decisions D-4 and D-22, by exhaustive search:")
        for c in report.claims:
            verdict = "holds" if c.holds else "DOES NOT HOLD"
            what = "reachable" if c.reachable else "unreachable"
            lines.append(f"    {c.id} {verdict}: {c.statement} ({what}, {c.states} states)")
        for c in report.claims:
            if c.id in SHOWN_TRACES and c.trace is not None:
                lines.append("")
                lines.extend("  " + line for line in c.trace.render().splitlines())
    return "\n".join(lines)
