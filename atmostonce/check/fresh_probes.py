"""Every probe conformance runs on fresh executors after the model's schedules, in order, and
the verdict of the first that finds something: bad input (`probes`), policy resolution
(`policy_probe`), the fence (`fence_probe`), workers' messages and abandoned runs
(`worker_probe`), restarts after every record (`restart_probe`), inside every batch
(`crash_probe`) and after hundreds of attempts (`long_call_probe`), and corrupt journals
(`journal_probe`). `atmostonce verify` and the mutation pipeline's probes stage both run them
from here."""

from __future__ import annotations

from collections.abc import Callable

from atmostonce.check.crash_probe import probe_crashes
from atmostonce.check.fence_probe import probe_fence
from atmostonce.check.journal_probe import probe_journal
from atmostonce.check.long_call_probe import probe_long_call
from atmostonce.check.policy_probe import probe_policies
from atmostonce.check.probes import probe
from atmostonce.check.restart_probe import probe_restart
from atmostonce.check.worker_probe import probe_workers
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
