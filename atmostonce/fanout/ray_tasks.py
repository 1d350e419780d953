"""Tasks as Ray remote tasks, for campaigns that outgrow one machine. Ray is imported here
only, and only when `--ray` is given: the core install never needs it. `local` starts a Ray
on this machine for the run (no dashboard) and shuts it down after; an address joins a
running cluster (whose workers must have atmostonce installed) and leaves it running."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from atmostonce.fanout.way import LOCAL
from atmostonce.spec.errors import SpecError

A = TypeVar("A")
R = TypeVar("R")


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise SpecError("--ray needs Ray, which is not installed: pip install "
                        "'atmostonce[ray]'") from None
    return ray


def on_ray(task: Callable[[A], R], inputs: Sequence[A], address: str,
           cpus: int | None = None) -> Iterator[tuple[int, R]]:
    """(index, result) of `task` on each of `inputs`, as each finishes, as Ray tasks; with
    `address` "local" on a Ray started here with `cpus` CPUs (None: all of them). Ray is
    shut down after only when this call started it."""
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        try:
            if address == LOCAL:
                ray.init(address="local", include_dashboard=False, num_cpus=cpus,
                         log_to_driver=False, logging_level=logging.ERROR)
            else:
                ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        except (ConnectionError, ValueError, RuntimeError) as error:
            raise SpecError(f"--ray {address}: cannot reach Ray: "
                            f"{' '.join(str(error).split())}") from None
    try:
        remote = ray.remote(num_cpus=1)(task)
        running = {remote.remote(item): index for index, item in enumerate(inputs)}
        try:
            while running:
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    yield running.pop(ref), ray.get(ref)
        finally:
            for ref in running:
                ray.cancel(ref)
    finally:
        if started:
            ray.shutdown()
