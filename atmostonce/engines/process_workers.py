"""Worker processes as an adapter controls them: the process control of the `Engine` interface
(list, kill, pause, resume, and noticing a dead one) that every adapter whose workers are OS
processes does the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from atmostonce.engines.adapter import WorkerRef
from atmostonce.runtime.processes import Managed
from atmostonce.spec.errors import SpecError


@dataclass
class ProcessWorker:
    """One worker process; `gone` once the adapter has seen it dead or killed it."""

    ref: WorkerRef
    process: Managed
    gone: bool = field(default=False, kw_only=True)


W = TypeVar("W", bound=ProcessWorker)


class ProcessWorkers(Generic[W]):
    """The workers an adapter started, by id."""

    def __init__(self) -> None:
        self._workers: dict[str, W] = {}

    def _of(self, ref: WorkerRef) -> W:
        worker = self._workers.get(ref.id)
        if worker is None:
            raise SpecError(f"no worker {ref.id} was started")
        return worker

    def workers(self) -> list[WorkerRef]:
        return [w.ref for w in self._workers.values() if w.process.alive]

    def worker_alive(self, worker: WorkerRef) -> bool:
        found = self._of(worker)
        if found.process.alive:
            return True
        self._mark_gone(found)
        return False

    def kill_worker(self, worker: WorkerRef) -> None:
        found = self._of(worker)
        found.process.kill()
        self._mark_gone(found)

    def _mark_gone(self, worker: W) -> None:
        if not worker.gone:
            worker.gone = True
            self._gone(worker)

    def _gone(self, worker: W) -> None:
        """What the engine does, once, about a worker process found dead or killed."""

    def pause_worker(self, worker: WorkerRef) -> None:
        self._of(worker).process.pause()

    def resume_worker(self, worker: WorkerRef) -> None:
        self._of(worker).process.resume()
