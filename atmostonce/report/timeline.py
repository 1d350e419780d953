"""A recorded history as the Jepsen-style timeline: each session's calls as bars from ask to
record, each worker's tool runs as bars from start to end (ground truth from the effect
ledger), and the faults as shaded bands."""

from __future__ import annotations

import re
from collections.abc import Sequence

from atmostonce.check.history import entries as h
from atmostonce.report.plots import Band, Bar


def natural(name: str) -> tuple[tuple[int, str], ...]:
    """A sort key reading runs of digits as numbers: `w2` before `w10`."""
    return tuple((int(part), "") if part.isdigit() else (-1, part)
                 for part in re.split(r"(\d+)", name) if part)


def timeline(entries: Sequence[h.Entry]) -> tuple[list[str], list[Bar], list[Band]]:
    """The lanes (sessions, then workers), the bars and the fault bands of a history, in
    seconds since its first entry."""
    lanes, bars, bands = _timeline(entries)
    t0 = entries[0].at if entries else 0.0
    return (lanes, [Bar(b.lane, b.start - t0, b.end - t0, b.outcome) for b in bars],
            [Band(b.start - t0, b.end - t0, b.kind, b.lane) for b in bands])


def _timeline(entries: Sequence[h.Entry]) -> tuple[list[str], list[Bar], list[Band]]:
    end = entries[-1].at if entries else 0.0
    asked: dict[str, tuple[str, float]] = {}
    runs: dict[int, tuple[str, float]] = {}
    bars: list[Bar] = []
    bands: list[Band] = []
    cut: dict[str, float] = {}
    crashed: dict[str, float] = {}
    sessions: dict[str, None] = {}
    workers: dict[str, None] = {}
    for e in entries:
        if isinstance(e, h.CallAsked):
            lane = f"session {e.session_id}"
            sessions.setdefault(lane, None)
            asked[e.key] = (lane, e.at)
        elif isinstance(e, h.RecordPublished) and e.key in asked:
            lane, start = asked.pop(e.key)
            bars.append(Bar(lane, start, e.at, e.status.value))
        elif isinstance(e, h.RunStarted):
            lane = f"worker {e.worker}"
            workers.setdefault(lane, None)
            runs[e.run] = (lane, e.at)
        elif isinstance(e, h.RunEnded) and e.run in runs:
            lane, start = runs.pop(e.run)
            bars.append(Bar(lane, start, e.at, f"run {e.end.value}"))
        elif isinstance(e, h.WorkerCut):
            cut[e.worker] = e.at
        elif isinstance(e, h.WorkerHealed) and e.worker in cut:
            bands.append(Band(cut.pop(e.worker), e.at, "cut", f"worker {e.worker}"))
        elif isinstance(e, h.WorkerCrashed):
            crashed[e.worker] = e.at
        elif isinstance(e, h.WorkerDeclaredLost | h.WorkerConnected) and e.worker in crashed:
            bands.append(Band(crashed.pop(e.worker), e.at, "crash", f"worker {e.worker}"))
        elif isinstance(e, h.ServerRestarted):
            bands.append(Band(e.at, e.at, "restart"))
    bars += [Bar(lane, start, end, "none") for lane, start in asked.values()]
    bars += [Bar(lane, start, end, "run going") for lane, start in runs.values()]
    bands += [Band(start, end, "cut", f"worker {w}") for w, start in cut.items()]
    bands += [Band(start, end, "crash", f"worker {w}") for w, start in crashed.items()]
    return [*sessions, *sorted(workers, key=natural)], bars, bands
