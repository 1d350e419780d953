"""Tasks on worker processes of this machine: a `concurrent.futures` process pool whose
workers come from a fork server (a clean process that has imported nothing of the caller's
but the task's module, so no lock or thread of the parent is copied in, the imports are paid
once, and each worker starts in milliseconds)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from atmostonce.spec.errors import SpecError

A = TypeVar("A")
R = TypeVar("R")


def on_processes(task: Callable[[A], R], inputs: Sequence[A], processes: int
                 ) -> Iterator[tuple[int, R]]:
    """(index, result) of `task` on each of `inputs`, as each finishes, on `processes` worker
    processes; `task` must be a module-level function (it is sent by name). An exception in a
    task is raised here, and the tasks not yet started are cancelled; a worker that dies is
    one line (SpecError)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([task.__module__])
    with ProcessPoolExecutor(max_workers=min(processes, max(len(inputs), 1)),
                             mp_context=context) as pool:
        running: dict[Future[R], int] = {pool.submit(task, item): index
                                          for index, item in enumerate(inputs)}
        try:
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    index = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        raise SpecError(f"a worker process died while running piece {index} "
                                        f"of {len(inputs)} (killed, or the code under test "
                                        "ended its process); run on one process to see "
                                        "it") from None
                    yield index, result
        finally:
            for future in running:
                future.cancel()
