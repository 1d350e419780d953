"""Worker processes behind proxies, as an adapter controls them: the process control of the
`Engine` interface (kill, pause, resume, cut, heal) that every adapter whose workers are OS
processes, each reaching its server through an `engines.proxy.Proxy`, does the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from atmostonce.engines.adapter import CutMode, WorkerRef
from atmostonce.engines.proxy import Proxy
from atmostonce.runtime.loop import LoopThread
from atmostonce.runtime.processes import Managed
from atmostonce.spec.errors import SpecError


@dataclass
class ProxiedWorker:
    """One worker process and the proxy between it and its server."""

    ref: WorkerRef
    process: Managed
    proxy: Proxy


W = TypeVar("W", bound=ProxiedWorker)


class ProxiedWorkers(Generic[W]):
    """The workers an adapter started, by id, and the event loop their proxies run on."""

    loop_name = "atmostonce-proxies"

    def __init__(self) -> None:
        self._workers: dict[str, W] = {}
        self._loop: LoopThread | None = None

    @property
    def loop(self) -> LoopThread:
        if self._loop is None:
            self._loop = LoopThread(self.loop_name)
        return self._loop

    def _of(self, ref: WorkerRef) -> W:
        worker = self._workers.get(ref.id)
        if worker is None:
            raise SpecError(f"no worker {ref.id} was started")
        return worker

    def workers(self) -> list[WorkerRef]:
        return [w.ref for w in self._workers.values() if w.process.alive]

    def worker_alive(self, worker: WorkerRef) -> bool:
        return self._of(worker).process.alive

    def kill_worker(self, worker: WorkerRef) -> None:
        self._of(worker).process.kill()

    def pause_worker(self, worker: WorkerRef) -> None:
        self._of(worker).process.pause()

    def resume_worker(self, worker: WorkerRef) -> None:
        self._of(worker).process.resume()

    def cut(self, worker: WorkerRef, mode: CutMode) -> None:
        proxy = self._of(worker).proxy
        self.loop.call(lambda: proxy.cut(mode))

    def heal(self, worker: WorkerRef) -> None:
        proxy = self._of(worker).proxy
        self.loop.call(proxy.heal)
