"""What a chaos run is asked to do (`atmostonce chaos`'s options), checked before anything starts,
and the command that runs the same seed, workload and fault schedule again; the executor's
options on every chaos run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from atmostonce.chaos.ledger_mutants import VARIANTS
from atmostonce.chaos.nemesis import DEFAULT_KINDS, NemesisKind
from atmostonce.check.executors.loading import DEFAULT_EXECUTOR
from atmostonce.engines.adapter import DEFAULT_ENGINE, CutMode
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorConfig

CHAOS_CONFIG = ExecutorConfig(max_attempts=3, retry_backoff=0.2, queue_timeout=10.0,
                              run_timeout=3.0, heartbeat_timeout=2.5, lease=1.0,
                              approval_deadline=4.0)
"""The executor's options on a chaos run: short enough that every timer matters within
seconds. The lease is well inside the heartbeat timeout (D-12), and the run timeout longer
than the heartbeat timeout, so a worker killed early in a run is declared lost (TC-REC-LOST)
and one killed late in a long run is first timed out (TC-AMO-3)."""
DRAIN = 60.0
"""Seconds the drain may take for every call to reach a record."""
MAX_DURATION = 24 * 3600.0
MAX_WORKERS = 16
MAX_PACE = 20.0
MAX_MIN_FAULTS = 100


@dataclass(frozen=True)
class ChaosOptions:
    duration: float = 60.0
    workers: int = 3
    nemesis: tuple[NemesisKind, ...] = DEFAULT_KINDS
    seed: int = 0
    fence: bool = False
    cancel_records_failed: bool = False
    """D-4's other choice, declared to the engine and to the checkers that judge it."""
    engine: str = DEFAULT_ENGINE
    executor: str = DEFAULT_EXECUTOR
    pace: float = 1.0
    """How many times the default rate of each kind of fault (`nemesis.MEAN_GAP`)."""
    cuts: tuple[CutMode, ...] = tuple(CutMode)
    """How a partition may cut a connection: held, dropped, or either."""
    min_faults: int = 0
    """Each kind asked for is injected at least this many times: the faults go on past the
    duration (at most as long again) until it has been."""
    drain: float = DRAIN
    """Seconds the drain may take for every call to reach a record."""
    sessions: int = 0
    """Sessions running at a time; 0 for four per worker."""
    ledger_variant: str = ""
    """A broken effect ledger to run instead of the real one (`chaos.ledger_mutants`): a
    positive control of the disk nemesis's ledger target; "" for the real ledger."""
    workdir: Path | None = None
    """Where to keep the run's files (journal, ledger, logs); when None, a temporary directory
    that is removed afterwards, unless the run failed (then it is kept and its path printed)."""

    def check(self) -> None:
        """SpecError, one line, for options no run can have."""
        if not 0 < self.duration <= MAX_DURATION:
            raise SpecError(f"--duration must be more than 0 and at most {MAX_DURATION:g} "
                            f"seconds, got {self.duration:g}")
        if not 1 <= self.workers <= MAX_WORKERS:
            raise SpecError(f"--workers must be between 1 and {MAX_WORKERS}, got {self.workers}")
        if not 0 < self.pace <= MAX_PACE:
            raise SpecError(f"--pace must be more than 0 and at most {MAX_PACE:g}, got "
                            f"{self.pace:g}")
        if self.seed < 0:
            raise SpecError(f"--seed must be >= 0, got {self.seed}")
        if not self.cuts:
            raise SpecError("--cuts needs at least one of hold, drop")
        if not 0 <= self.min_faults <= MAX_MIN_FAULTS:
            raise SpecError(f"--min-faults must be between 0 and {MAX_MIN_FAULTS}, got "
                            f"{self.min_faults}")
        if self.drain <= 0:
            raise SpecError(f"the drain must last more than 0 seconds, got {self.drain:g}")
        if self.sessions < 0:
            raise SpecError(f"sessions must be >= 0, got {self.sessions}")
        if self.ledger_variant and self.ledger_variant not in VARIANTS:
            raise SpecError(f"--ledger-variant must be one of {', '.join(VARIANTS)}, got "
                            f"{self.ledger_variant!r}")

    @property
    def config(self) -> ExecutorConfig:
        return replace(CHAOS_CONFIG, fence=self.fence,
                       cancel_records_failed=self.cancel_records_failed)

    def command(self) -> str:
        """The command that runs the same seed, workload and fault schedule again (the real
        processes decide the exact interleaving, so a rerun may take another path)."""
        parts = [f"atmostonce chaos --duration {self.duration:g} --workers {self.workers}",
                 f"--nemesis {','.join(k.value for k in self.nemesis) or 'none'}",
                 f"--seed {self.seed}"]
        if self.pace != 1.0:
            parts.append(f"--pace {self.pace:g}")
        if self.min_faults:
            parts.append(f"--min-faults {self.min_faults}")
        if set(self.cuts) != set(CutMode):
            parts.append(f"--cuts {','.join(c.value for c in self.cuts)}")
        if self.fence:
            parts.append("--fence")
        if self.cancel_records_failed:
            parts.append("--cancel-records-failed")
        if self.engine != DEFAULT_ENGINE:
            parts.append(f"--engine {self.engine}")
        if self.executor != DEFAULT_EXECUTOR:
            parts.append(f"--executor {self.executor}")
        if self.ledger_variant:
            parts.append(f"--ledger-variant {self.ledger_variant}")
        return " ".join(parts)
