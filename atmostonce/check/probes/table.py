"""Every probe of fresh executors, in one table of one shape (what it drives, what it requires,
the clauses it pins, the verdict its problems give), and the one runner that `atmostonce verify`
and the mutation pipeline's probes stage both use: the probes run in order after the model's
schedules, and the first that finds something gives the verdict."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from atmostonce.check.probes.bad_input import probe
from atmostonce.check.probes.crashes import probe_crashes
from atmostonce.check.probes.fence import probe_fence
from atmostonce.check.probes.journal import probe_journal
from atmostonce.check.probes.long_call import probe_long_call
from atmostonce.check.probes.policies import probe_policies
from atmostonce.check.probes.restart import probe_restart
from atmostonce.check.probes.workers import probe_workers
from atmostonce.spec.protocol import ExecutorConfig, ExecutorFactory

ProbeRun = Callable[[ExecutorFactory, ExecutorConfig], list[str]]
"""A probe's run: fresh executors from the factory, one line per problem found."""


@dataclass(frozen=True)
class Probe:
    """One probe: what it drives the executor through, what it requires of it, the clauses it
    pins, and the verdict of the conformance layer when it finds a problem."""

    name: str
    drives: str
    requires: str
    clauses: tuple[str, ...]
    verdict: str
    run: ProbeRun


def _bad_input(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    return [f"took bad input: {problem}" for problem in probe(factory, config)]


PROBES: tuple[Probe, ...] = (
    Probe("bad input",
          "asks with empty, ambiguous or non-text ids, answers and user messages to nothing, "
          "options outside ExecutorConfig's range and at its edge",
          "every one refused (SpecError, or one refusing reply and nothing else), the edge taken",
          ("D-2", "D-7", "D-12", "TC-RCN-TELL"), "TOOK BAD INPUT", _bad_input),
    Probe("policies",
          "one call for every ToolPolicy, hint combination and session default under either "
          "choice of D-22, and a tool nobody registered; then a policy change and a second call",
          "each call resolved, waiting and recorded as the spec resolves it; the first keeps its "
          "policy", ("TC-POL-1", "TC-APR-2", "TC-APR-5", "TC-SNAP-1", "D-1", "D-11", "D-22"),
          "RESOLVES POLICIES OTHERWISE THAN THE SPEC", probe_policies),
    Probe("fence",
          "a single-attempt run given up on while it may go, then new calls of that tool, of "
          "another single-attempt tool and of a read",
          "only the new call of the same tool waits, and only until the run is over",
          ("D-6", "TC-AMO-4"), "FENCES OTHERWISE THAN D-6", probe_fence),
    Probe("workers",
          "messages about an attempt another worker holds; runs given up on that end by a late "
          "result, a reconnect and the heartbeat timeout; restarts after each entry",
          "foreign messages change nothing, and the fence counts exactly the runs that may go",
          ("TC-AMO-1", "TC-AMO-3", "TC-REC-1", "D-6", "D-8", "D-12"),
          "TAKES WORKERS' MESSAGES OR ABANDONED RUNS OTHERWISE THAN THE SPEC", probe_workers),
    Probe("restart",
          "calls to every record, one waiting for a person and a user message, then a restart",
          "the same records, errors, kept policies, deadlines, attempts and session history",
          ("TC-REC-1", "TC-REC-2", "TC-SNAP-1", "D-8", "D-30", "D-32"),
          "A RESTART CHANGES WHAT THE SESSION SHOWS", probe_restart),
    Probe("crashes",
          "the journal of one run cut after each of its entries, each prefix recovered and "
          "driven to quiescence",
          "every call recorded; a record made before the cut kept; a cut batch's end recorded "
          "as before; deadlines, floors and the fence kept", ("TC-REC-1", "D-3", "D-6", "D-8",
                                                              "D-12", "D-22", "D-32"),
          "A RESTART INSIDE A BATCH LOSES OR CHANGES A CALL", probe_crashes),
    Probe("long call",
          "an idempotent write retried 300 times as its workers are lost, then a restart",
          "the same record, error and every attempt after the restart",
          ("TC-REC-RETRY", "D-8", "D-30"), "A RESTART CHANGES A LONG-RETRIED CALL",
          probe_long_call),
    Probe("journal",
          "the executor's own journal, corrupted one field or one entry at a time",
          "each corruption refused with one line naming the entry and the field, never taken "
          "silently nor with a crash", ("D-8", "D-22"), "RECOVERS FROM A CORRUPT JOURNAL",
          probe_journal),
)
"""Every probe, in the order they run."""


def first_problems(factory: ExecutorFactory, config: ExecutorConfig) -> tuple[str, list[str]]:
    """The verdict and problem lines of the first probe that finds any; ("", []) when none
    does."""
    for each in PROBES:
        problems = each.run(factory, config)
        if problems:
            return each.verdict, problems
    return "", []
