"""The kill pipeline: each mutant written into one of N private copies of the package, and its
trial run there in a fresh process (`kill`) with a time bound; N trials at a time, or each as a
Ray task on a copy of the package the Ray worker has installed (`ray`). Every result is
appended to a state file as it comes, so a pipeline stopped halfway goes on where it was;
a result counts only for the module version it was made on, and a survival only for the
checks it survived (`checks_sha`).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from atmostonce.fanout.way import LOCAL
from atmostonce.mutation.generate import Mutant, mutated_source
from atmostonce.spec.errors import SpecError

TIMEOUT = "timeout"
UNTRIED = "untried"
"""The trial could not be made (the module changed since the mutant was made): not counted."""


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    killed_by: str | None
    """The stage that killed it, "import" when the mutated executor did not load, "timeout"
    when the trial did not end in time, None when it survived every stage."""
    layer: str | None
    detail: str
    seconds: float
    stages: tuple[str, ...]
    """The stages it was tried with."""
    checks: str = ""
    """The sha256 of the checking code it was tried with (`checks_sha`)."""

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "mutant": asdict(self.mutant), "id": self.mutant.id}


def load_state(path: Path | None) -> dict[str, Outcome]:
    """The results already in the state file, by mutant id (the newest one of each); a line
    cut short by a stop is skipped."""
    found: dict[str, Outcome] = {}
    if path is None or not path.exists():
        return found
    for line in path.read_text().splitlines():
        try:
            data = json.loads(line)
            outcome = Outcome(Mutant(**data["mutant"]), data["killed_by"], data["layer"],
                              data["detail"], float(data["seconds"]), tuple(data["stages"]),
                              str(data.get("checks", "")))
        except (ValueError, KeyError, TypeError):
            continue
        found[outcome.mutant.id] = outcome
    return found


def run(mutants: Iterable[Mutant], root: Path, executor: str, stages: Sequence[str],
        processes: int, timeout: float, state: Path | None,
        done: Callable[[Outcome], None] = lambda outcome: None,
        ray: str | None = None) -> list[Outcome]:
    """Every mutant's outcome, those in `state` taken as they are (with the same source and,
    for a survivor, the same stages); a survivor of the first stages meets only the stages
    after them; the others are tried `processes` at a time, or as Ray tasks on the Ray `ray`
    names ("local": one started here with `processes` CPUs)."""
    known = load_state(state)
    checks = checks_sha(root)
    results: list[Outcome] = []
    todo: queue.Queue[tuple[Mutant, Outcome | None]] = queue.Queue()
    for mutant in mutants:
        old = known.get(mutant.id)
        if old is not None and (old.mutant != mutant or (
                old.killed_by is None and old.checks != checks)):
            old = None
        if old is not None and (old.killed_by is not None
                                or old.stages[:len(stages)] == tuple(stages)):
            results.append(old)  # a survivor of these stages and more survived these
            done(old)
        elif old is not None and old.stages == tuple(stages[:len(old.stages)]):
            todo.put((mutant, old))
        else:
            todo.put((mutant, None))
    lock = threading.Lock()

    def finished(outcome: Outcome) -> None:
        with lock:
            results.append(outcome)
            if outcome.killed_by != UNTRIED and state is not None:
                with state.open("a") as out:
                    out.write(json.dumps(outcome.as_json()) + "\n")
            done(outcome)

    if ray is not None:
        from atmostonce.fanout.ray_tasks import on_ray

        jobs = [Job(mutant, executor, tuple(stages), timeout, checks, survived)
                for mutant, survived in todo.queue]
        for _, outcome in on_ray(trial_on_ray, jobs, ray,
                                 processes if ray == LOCAL else None):
            finished(outcome)
        return results
    with tempfile.TemporaryDirectory(prefix="atmostonce-mutation-") as scratch:
        slots = [_slot(root, Path(scratch) / f"slot{i}") for i in range(max(1, processes))]

        def work(slot: Path) -> None:
            while True:
                try:
                    mutant, survived = todo.get_nowait()
                except queue.Empty:
                    return
                finished(_attempt(Job(mutant, executor, tuple(stages), timeout, checks,
                                      survived), slot))

        threads = [threading.Thread(target=work, args=(slot,), daemon=True) for slot in slots]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return results


@dataclass(frozen=True)
class Job:
    """One mutant to try: with `survived`, only the stages after those it survived."""

    mutant: Mutant
    executor: str
    stages: tuple[str, ...]
    timeout: float
    checks: str
    survived: Outcome | None


def _attempt(job: Job, slot: Path) -> Outcome:
    """The job's outcome over all its stages, its trial run in `slot`; UNTRIED when the trial
    could not be made."""
    stages, survived = job.stages, job.survived
    try:
        if survived is None:
            return replace(_trial(job.mutant, slot, job.executor, stages, job.timeout),
                           checks=job.checks)
        later = _trial(job.mutant, slot, job.executor, stages[len(survived.stages):],
                       job.timeout)
        return replace(later, stages=stages, checks=job.checks,
                       seconds=survived.seconds + later.seconds)
    except (SpecError, OSError) as error:
        return Outcome(job.mutant, UNTRIED, None, str(error), 0.0, stages)


def trial_on_ray(job: Job) -> Outcome:
    """A Ray task: the job tried on a private copy of the package this Ray worker imports.
    SpecError when its checking code is not the code the pipeline's caller runs (a survival
    there would say nothing of these checks); a mutant of another version of its module is
    UNTRIED, as on this machine."""
    import atmostonce

    root = Path(atmostonce.__file__).resolve().parents[1]
    if checks_sha(root) != job.checks:
        raise SpecError(f"the Ray worker on {os.uname().nodename} imports atmostonce from "
                        f"{root}, whose checks differ from this checkout's: install the same "
                        "version there")
    with tempfile.TemporaryDirectory(prefix="atmostonce-mutation-") as scratch:
        return _attempt(job, _slot(root, Path(scratch)))


def checks_sha(root: Path) -> str:
    """The sha256 over the package's code but the executor's: the checks a survivor survived.
    A kill stays a kill when the checks change (it has its counterexample; run with a fresh
    state to measure weaker checks); a survival is tried again."""
    digest = hashlib.sha256()
    package = root / "atmostonce"
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] == "executor":
            continue
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _slot(root: Path, slot: Path) -> Path:
    """A private copy of the package for one trial at a time, without compiled files (a
    mutated module must be compiled from its source)."""
    shutil.copytree(root / "atmostonce", slot / "atmostonce",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (slot / "tmp").mkdir()
    return slot


def _trial(mutant: Mutant, slot: Path, executor: str, stages: Sequence[str],
           timeout: float) -> Outcome:
    path = slot / mutant.module
    original = path.read_text()
    started = time.monotonic()
    try:
        path.write_text(mutated_source(mutant, path))
        env = {**os.environ, "PYTHONPATH": str(slot), "PYTHONDONTWRITEBYTECODE": "1",
               "TMPDIR": str(slot / "tmp")}
        child = subprocess.Popen(
            [sys.executable, "-m", "atmostonce.mutation.kill", "--executor", executor,
             "--stages", ",".join(stages)], cwd=slot, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return Outcome(mutant, TIMEOUT, None, f"no verdict within {timeout:g} s",
                           time.monotonic() - started, tuple(stages))
        lines = out.strip().splitlines()
        try:
            data = json.loads(lines[-1])
        except (IndexError, ValueError):
            tail = (err.strip().splitlines() or ["no output"])[-1]
            return Outcome(mutant, "crash", "import", f"the trial died ({child.returncode}): "
                           f"{tail}", time.monotonic() - started, tuple(stages))
        return Outcome(mutant, data["killed_by"], data["layer"], str(data["detail"])[:500],
                       time.monotonic() - started, tuple(stages))
    finally:
        path.write_text(original)
        _empty(slot / "tmp")


def _empty(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
