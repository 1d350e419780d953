"""Live progress of the long commands, drawn by rich on stderr while they run and cleared when
they end. A command asks `board(json)` for its display: it is live only when stdout and stderr
are both terminals and the command prints its human report; otherwise nothing is drawn at all,
so scripts and `--json` read exactly the results. Each running task is a `Meter`: a count
towards a known total shows a bar with the time left, one without a total a spinner with its
rate. Neutral on purpose: it imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

UPDATE_EVERY = 0.1
"""Seconds between two updates a meter passes on to the display; the last one always shows."""


class Meter:
    """One line of the display: `what` runs, `done` of `total` (when known) in `unit`, and a
    short note. The quiet meter (`QUIET`, any meter of a quiet board) draws nothing."""

    def __init__(self, progress: Progress | None = None, task: TaskID | None = None,
                 total: float | None = None) -> None:
        self._progress = progress
        self._task = task
        self._total = total
        self._shown = 0.0
        self._pending: dict[str, Any] = {}

    @property
    def live(self) -> bool:
        return self._progress is not None

    def update(self, done: float | None = None, *, total: float | None = None,
               note: str | None = None, what: str | None = None) -> None:
        """Move the line on; parts not given stay. Updates closer together than UPDATE_EVERY
        are gathered, except one that names a new task or reaches the total."""
        if self._progress is None:
            return
        if total is not None:
            self._total = total
        for key, value in (("completed", done), ("total", total), ("note", note),
                           ("description", what)):
            if value is not None:
                self._pending[key] = value
        now = time.monotonic()
        reached = done is not None and self._total is not None and done >= self._total
        if reached or what is not None or now - self._shown >= UPDATE_EVERY:
            self._flush(now)

    def finish(self, note: str | None = None) -> None:
        """The task ended: show its last count and note, stop its clock and its spinner."""
        if self._progress is None:
            return
        if note is not None:
            self._pending["note"] = note
        self._pending["finished"] = True
        self._flush(time.monotonic())
        assert self._task is not None
        self._progress.stop_task(self._task)

    def _flush(self, now: float) -> None:
        assert self._progress is not None
        assert self._task is not None
        self._shown = now
        pending, self._pending = self._pending, {}
        self._progress.update(self._task, **pending)


QUIET = Meter()
"""The meter that draws nothing: the default wherever a caller may pass one."""


class Board:
    """The live display of one command, a context manager; `meter` adds a line to it. A quiet
    board (`live` false) draws nothing and imports nothing of rich."""

    def __init__(self, live: bool) -> None:
        self.live = live
        self._progress: Progress | None = None

    def __enter__(self) -> Board:
        if self.live:
            self._progress = _rich_progress()
            self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def meter(self, what: str, total: float | None = None, unit: str = "") -> Meter:
        """A new line for the task `what`: a bar when `total` is known, else a spinner."""
        if self._progress is None:
            return QUIET
        task = self._progress.add_task(what, total=total, unit=unit, note="", finished=False)
        return Meter(self._progress, task, total)


def board(json: bool = False) -> Board:
    """The display a command shows: live only on a terminal (stdout and stderr) without
    `--json`."""
    return Board(not json and _terminal(sys.stdout) and _terminal(sys.stderr))


def _terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:
        return False


def _rich_progress() -> Progress:
    """rich's Progress on stderr with the columns of a meter; transient, so the results a
    command prints afterwards stand alone."""
    from rich.console import Console, RenderableType
    from rich.progress import (
        BarColumn,
        ProgressColumn,
        SpinnerColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.progress import Progress as RichProgress
    from rich.table import Column
    from rich.text import Text

    class Spinner(SpinnerColumn):
        """A spinner while the task runs, a tick once it ended (with or without a total)."""

        def render(self, task: Task) -> RenderableType:
            if task.fields["finished"]:
                return Text("✓", style="green")
            return self.spinner.render(task.get_time())

    class Bar(ProgressColumn):
        """The bar, only for a task with a known total; narrower on a narrow terminal."""

        def __init__(self) -> None:
            super().__init__()
            self.bar = BarColumn(bar_width=24)

        def render(self, task: Task) -> RenderableType:
            return Text("") if task.total is None else self.bar.render(task)

    class Count(ProgressColumn):
        """done/total unit, or done unit while the total is unknown."""

        def render(self, task: Task) -> Text:
            unit = task.fields["unit"]
            if not unit:
                return Text("")
            done = _amount(task.completed)
            if task.total is None:
                return Text(f"{done} {unit}")
            return Text(f"{done}/{_amount(task.total)} {unit}")

    class Rate(ProgressColumn):
        """How fast the count grows, for a task without a total."""

        def render(self, task: Task) -> Text:
            if task.total is not None or not task.fields["unit"] or not task.speed:
                return Text("")
            return Text(f"{task.speed:,.0f} {task.fields['unit']}/s", style="cyan")

    class Eta(ProgressColumn):
        """The time left, for a task still short of its total."""

        def render(self, task: Task) -> Text:
            left = task.time_remaining
            if (task.total is None or left is None or task.fields["finished"]
                    or task.completed >= task.total):
                return Text("")
            minutes, seconds = divmod(int(left + 0.5), 60)
            return Text(f"ETA {minutes}:{seconds:02d}", style="cyan")

    class Note(ProgressColumn):
        """The task's note, the one column cut short (with an ellipsis) on a narrow terminal."""

        def render(self, task: Task) -> Text:
            return Text(task.fields["note"], style="dim", no_wrap=True, overflow="ellipsis")

    def fixed() -> Column:
        return Column(no_wrap=True)

    return RichProgress(
        Spinner(table_column=fixed()),
        TextColumn("{task.description}", table_column=fixed()),
        Bar(),
        Count(table_column=fixed()),
        Rate(table_column=fixed()),
        TimeElapsedColumn(table_column=fixed()),
        Eta(table_column=fixed()),
        Note(),
        console=Console(stderr=True),
        transient=True,
    )


def _amount(value: float) -> str:
    return f"{value:,.0f}"
