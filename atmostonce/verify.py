"""`atmostonce verify`: every layer that applies, run in order, and one verdict.

Each check returns a `CheckResult`; the verdict passes only when every check passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from atmostonce.check import coverage, proofs


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


Check = Callable[[], CheckResult]

SPEC_CHECKS: tuple[Check, ...] = (check_clause_coverage, check_proofs)
MODEL_CHECKS: tuple[Check, ...] = (check_model,)
ALL_CHECKS: tuple[Check, ...] = SPEC_CHECKS + MODEL_CHECKS


def run(checks: tuple[Check, ...], progress: Callable[[str], None]) -> list[CheckResult]:
    results: list[CheckResult] = []
    for check in checks:
        progress(check.__name__.removeprefix("check_").replace("_", " "))
        results.append(check())
    return results
