"""The model's schedules replayed in pieces where the fan-out puts them (worker processes, a
Ray cluster), for every configuration at once, and put back together in order: each piece
stops at its first failing schedule, as the serial replay does, and the pieces are added up
to the first failure of all, so counts and the failure shown equal the serial replay's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from atmostonce.check.executors.reloading import Settings, reload, reloadable, settings
from atmostonce.check.lockstep.conformance import ConformanceResult, replay_list, schedules
from atmostonce.fanout.chunks import chunks
from atmostonce.fanout.run import fan_out
from atmostonce.fanout.way import Way
from atmostonce.model.config import ModelConfig
from atmostonce.model.layout import Label
from atmostonce.spec.protocol import ExecutorFactory


@dataclass(frozen=True)
class Piece:
    config: ModelConfig
    executor: str
    schedules: tuple[list[Label], ...]
    depth: int
    settings: Settings


def replay_piece(piece: Piece) -> ConformanceResult:
    """The piece's schedules replayed in this (worker) process, up to the first that fails."""
    return replay_list(piece.config, reload(piece.executor, piece.settings), piece.schedules,
                       piece.depth)


def add(whole: ConformanceResult, piece: ConformanceResult) -> None:
    """A piece's counts and failures, added after the pieces before it."""
    whole.schedules += piece.schedules
    whole.steps += piece.steps
    whole.diverged += piece.diverged
    whole.disagreements += piece.disagreements
    whole.breaches += piece.breaches
    whole.seconds += piece.seconds


def replay_fanned(configs: Sequence[ModelConfig], path: str, factory: ExecutorFactory,
                  depth: int, way: Way, progress: Callable[[int, int], None] | None = None
                  ) -> list[ConformanceResult]:
    """Each configuration's replay of every transition within `depth`, in order, up to the
    first that finds something wrong (the later ones left out), run the way `way` says;
    `progress` hears the schedules replayed and in all, over every configuration."""
    reloadable(path, factory)
    given = settings()
    pieces: list[Piece] = []
    owner: list[int] = []
    for index, config in enumerate(configs):
        todo = list(schedules(config, depth, edges=True))
        for part in chunks(todo, way.workers):
            pieces.append(Piece(config, path, part, depth, given))
            owner.append(index)
    total = sum(len(p.schedules) for p in pieces)
    heard = [0]

    def finished(_: int, done: ConformanceResult) -> None:
        heard[0] += done.schedules
        if progress is not None:
            progress(heard[0], total)

    if progress is not None:
        progress(0, total)
    results: list[ConformanceResult] = []
    replayed = fan_out(replay_piece, pieces, way, finished)
    try:
        for index, done in zip(owner, replayed, strict=True):
            if index == len(results):
                results.append(ConformanceResult(depth))
            add(results[index], done)
            if not done.ok:
                break
    finally:
        replayed.close()
    return results
