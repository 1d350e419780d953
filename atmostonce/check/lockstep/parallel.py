"""The model's schedules replayed for several configurations at once, one configuration in
this process and each other in a fresh process of its own, so verify's conformance layer
uses both cores. Only a factory a child can load again from its path goes to a child (a
closure cannot); otherwise the configurations are replayed one after the other, with the
same results either way."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any

from atmostonce.check.lockstep.conformance import ConformanceResult, replay_schedules
from atmostonce.fanout.way import SERIAL, Way
from atmostonce.model.config import ModelConfig
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorFactory

Progress = Callable[[int, int], None]

def replay_all(configs: Sequence[ModelConfig], path: str, factory: ExecutorFactory,
               depth: int, progress: Progress | None = None, way: Way = SERIAL
               ) -> list[ConformanceResult]:
    """Each configuration's replay (`replay_schedules` with `edges=True`), in order, up to
    the first that finds something wrong (as replaying them one after the other would stop):
    the later ones are then left out. `progress` hears the schedules replayed and in all,
    summed over the configurations when they run at once. A `way` other than serial fans
    the schedules out in pieces (`fanned`), with the same results."""
    if not way.serial:
        from atmostonce.check.lockstep.fanned import replay_fanned

        return replay_fanned(configs, path, factory, depth, way, progress)
    if len(configs) < 2 or not _reloadable(path, factory):
        results: list[ConformanceResult] = []
        for config in configs:
            results.append(replay_schedules(config, factory, depth, progress, edges=True))
            if not results[-1].ok:
                break
        return results
    context = multiprocessing.get_context("spawn")
    children = []
    for config in configs[1:]:
        counts, (receive, send) = context.Array("q", 2), context.Pipe(duplex=False)
        child = context.Process(target=_replay, args=(config, path, depth, counts, send),
                                daemon=True)
        child.start()
        send.close()
        children.append((child, counts, receive))
    own = [0, 0]

    def tell() -> None:
        if progress is not None:
            progress(own[0] + sum(int(c[0]) for _, c, _ in children),
                     own[1] + sum(int(c[1]) for _, c, _ in children))

    def heard(done: int, total: int) -> None:
        own[0], own[1] = done, total
        tell()

    try:
        results = [replay_schedules(configs[0], factory, depth, heard, edges=True)]
        for child, _, receive in children:
            if not results[-1].ok:
                break
            while not receive.poll(0.2):
                tell()
            try:
                kind, value = receive.recv()
            except EOFError:
                child.join(timeout=10)
                raise SpecError(f"the replay of {path} in a child process died "
                                f"(exit {child.exitcode})") from None
            if kind == "error":
                raise value
            results.append(value)
        tell()
        return results
    finally:
        for child, _, receive in children:
            receive.close()
            if child.is_alive():
                child.kill()
            child.join(timeout=10)


def _reloadable(path: str, factory: ExecutorFactory) -> bool:
    """Whether loading `path` in a fresh process gives this very factory."""
    from atmostonce.check.executors.loading import load_callable

    try:
        return load_callable(path, "executor", "", "module:factory") is factory
    except Exception:
        return False


def _replay(config: ModelConfig, path: str, depth: int, counts: Any, send: Any) -> None:
    """A child's replay; its result, or the exception it raised, goes back through `send`."""
    from atmostonce.check.executors.loading import load_factory

    def heard(done: int, total: int) -> None:
        counts[0], counts[1] = done, total

    try:
        send.send(("result", replay_schedules(config, load_factory(path), depth, heard,
                                              edges=True)))
    except Exception as error:
        send.send(("error", error))
    finally:
        send.close()
