"""Every probe conformance runs on fresh executors after the model's schedules, in order, and
the verdict of the first that finds something: bad input (`bad_input`), policy resolution
(`policies`), the fence (`fence`), workers' messages and abandoned runs
(`workers`), restarts after every record (`restart`), inside every batch
(`crashes`) and after hundreds of attempts (`long_call`), and corrupt journals
(`journal`). `atmostonce verify` and the mutation pipeline's probes stage both run them
from here."""

from __future__ import annotations

from collections.abc import Callable

from atmostonce.check.probes.bad_input import probe
from atmostonce.check.probes.crashes import probe_crashes
from atmostonce.check.probes.fence import probe_fence
from atmostonce.check.probes.journal import probe_journal
from atmostonce.check.probes.long_call import probe_long_call
from atmostonce.check.probes.policies import probe_policies
from atmostonce.check.probes.restart import probe_restart
from atmostonce.check.probes.workers import probe_workers
from atmostonce.spec.protocol import ExecutorConfig, ExecutorFactory

Probe = Callable[[ExecutorFactory, ExecutorConfig], list[str]]

PROBES: tuple[tuple[str, Probe], ...] = (
    ("TOOK BAD INPUT", lambda factory, config: [f"took bad input: {problem}"
                                                for problem in probe(factory, config)]),
    ("RESOLVES POLICIES OTHERWISE THAN THE SPEC", probe_policies),
    ("FENCES OTHERWISE THAN D-6", probe_fence),
    ("TAKES WORKERS' MESSAGES OR ABANDONED RUNS OTHERWISE THAN THE SPEC", probe_workers),
    ("A RESTART CHANGES WHAT THE SESSION SHOWS", probe_restart),
    ("A RESTART INSIDE A BATCH LOSES OR CHANGES A CALL", probe_crashes),
    ("A RESTART CHANGES A LONG-RETRIED CALL", probe_long_call),
    ("RECOVERS FROM A CORRUPT JOURNAL", probe_journal),
)
"""Each probe with the verdict its problems give."""


def first_problems(factory: ExecutorFactory, config: ExecutorConfig) -> tuple[str, list[str]]:
    """The verdict and problem lines of the first probe that finds any; ("", []) when none
    does."""
    for verdict, run in PROBES:
        problems = run(factory, config)
        if problems:
            return verdict, problems
    return "", []
