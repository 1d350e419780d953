"""Tasks as Ray remote tasks, for campaigns that outgrow one machine. Ray is imported here
only, and only when `--ray` is given: the core install never needs it. `local` starts a Ray
on this machine for the run (no dashboard) and shuts it down after; an address joins a
running cluster (whose workers must have atmostonce installed) and leaves it running."""

from __future__ import annotations

import logging
import socket
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


REACH_SECONDS = 5.0
"""How long a cluster's address may take to accept a connection before it counts as
unreachable (Ray itself would keep trying for minutes)."""


def answers(address: str, seconds: float = REACH_SECONDS) -> None:
    """SpecError, one line, unless something accepts a connection at `address`
    (`host:port` or `ray://host:port`) within `seconds`; `auto` and other forms are left to
    Ray."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=seconds).close()
    except OSError as error:
        raise SpecError(f"--ray {address}: nothing answers at {host}:{port} "
                        f"({error.strerror or error}); is the cluster's head running?") from None


def on_ray(task: Callable[[A], R], inputs: Sequence[A], address: str,
           cpus: int | None = None) -> Iterator[tuple[int, R]]:
    """(index, result) of `task` on each of `inputs`, as each finishes, as Ray tasks; with
    `address` "local" on a Ray started here with `cpus` CPUs (None: all of them). A task's
    exception is raised here as itself (a SpecError stays one line). Ray is shut down after
    only when this call started it."""
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        if address != LOCAL:
            answers(address)
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
                    index = running.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as error:
                        cause = getattr(error, "cause", None)
                        if isinstance(cause, Exception):
                            raise cause from None
                        raise
                    yield index, result
        finally:
            for ref in running:
                ray.cancel(ref)
    finally:
        if started:
            ray.shutdown()
