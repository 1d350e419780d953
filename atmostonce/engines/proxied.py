"""Worker processes behind proxies, as an adapter controls them: the process control of the
`Engine` interface (kill, pause, resume, cut, heal) that every adapter whose workers are OS
processes, each reaching its server through an `engines.proxy.Proxy`, does the same way: the
`ProcessWorkers` control plus cutting and healing the proxy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from atmostonce.engines.adapter import CutMode, WorkerRef
from atmostonce.engines.process_workers import ProcessWorker, ProcessWorkers
from atmostonce.engines.proxy import Proxy
from atmostonce.runtime.loop import LoopThread


@dataclass
class ProxiedWorker(ProcessWorker):
    """One worker process and the proxy between it and its server."""

    proxy: Proxy


W = TypeVar("W", bound=ProxiedWorker)


class ProxiedWorkers(ProcessWorkers[W]):
    """The workers an adapter started, by id, and the event loop their proxies run on."""

    loop_name = "atmostonce-proxies"

    def __init__(self) -> None:
        super().__init__()
        self._loop: LoopThread | None = None

    @property
    def loop(self) -> LoopThread:
        if self._loop is None:
            self._loop = LoopThread(self.loop_name)
        return self._loop

    def cut(self, worker: WorkerRef, mode: CutMode) -> None:
        proxy = self._of(worker).proxy
        self.loop.call(lambda: proxy.cut(mode))

    def heal(self, worker: WorkerRef) -> None:
        proxy = self._of(worker).proxy
        self.loop.call(proxy.heal)
