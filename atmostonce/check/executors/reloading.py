"""An executor loaded again in another process (a worker of a fanned-out campaign): by its
`module:factory` path, with the caller's `ATMOSTONCE_` settings (such as `--executor-cmd`'s
command) set first, once per process. Only a factory its path names can travel so; one made
on the fly (a closure) is refused before any work starts."""

from __future__ import annotations

import os

from atmostonce.check.executors.loading import load_callable, load_factory
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import ExecutorFactory

SETTINGS_PREFIX = "ATMOSTONCE_"

Settings = tuple[tuple[str, str], ...]


def settings() -> Settings:
    """This process's `ATMOSTONCE_` environment, to be set in a worker."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(SETTINGS_PREFIX)))


def reloadable(path: str, factory: ExecutorFactory) -> None:
    """SpecError unless loading `path` again, as a worker does, gives this very `factory`."""
    try:
        again = load_callable(path, "executor", "", "module:factory")
    except SpecError:
        again = None
    if again is not factory:
        raise SpecError(f"cannot fan the work out: its executor factory is not the one "
                        f"{path!r} names, and a worker can load only a factory named by its "
                        "module:factory path")


_loaded: dict[str, ExecutorFactory] = {}


def reload(path: str, given: Settings) -> ExecutorFactory:
    """The factory at `path`, loaded in this (worker) process with the `given` settings."""
    os.environ.update(given)
    factory = _loaded.get(path)
    if factory is None:
        factory = _loaded[path] = load_factory(path)
    return factory
