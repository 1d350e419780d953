"""Group commit: every entry the executor persists becomes durable before anything that follows
it can be seen outside the server.

`persist` queues an entry; `then` queues an action with an outside effect (a go-ahead, a cancel,
a published record, a reply, a dropped connection, a snapshot) behind every entry persisted so
far. One writer thread commits whatever has queued up in one fsynced transaction while the event
loop keeps handling events, so a busy server pays one fsync for many events; when a commit
returns, the actions it released run in the order they were queued. That order is what makes
the hand-out durable before its go-ahead (D-5) and a record durable before any client can read
it (TC-REC-1).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from atmostonce.runtime.journal import JournalFile

Action = Callable[[], None]

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class GroupCommit:
    """The journal's write pipeline; `on_fatal` is called once if a commit fails, after which
    no further action runs (nothing may be shown that is not durable)."""

    def __init__(self, journal: JournalFile, on_fatal: Callable[[BaseException], None]) -> None:
        self.journal = journal
        self.on_fatal = on_fatal
        self.appended = journal.entries
        self.durable = journal.entries
        self.commits = 0
        self.committed_entries = 0
        self._pending: list[str] = []
        self._actions: deque[tuple[int, Action]] = deque()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")
        self._flushing = False
        self._scheduled = False
        self._failed = False
        self._idle = asyncio.Event()
        self._idle.set()

    def persist(self, entry: dict[str, Any]) -> None:
        self._pending.append(_dumps(entry))
        self.appended += 1
        self._idle.clear()
        if not self._flushing and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def then(self, action: Action) -> None:
        """Run `action` once every entry persisted before this call is durable."""
        if self._failed:
            return
        if not self._actions and self.durable == self.appended:
            action()
        else:
            self._actions.append((self.appended, action))

    def _flush(self) -> None:
        self._scheduled = False
        if self._flushing or self._failed or not self._pending:
            return
        batch, self._pending = self._pending, []
        self._flushing = True
        future = asyncio.get_running_loop().run_in_executor(self._writer, self.journal.append,
                                                            batch)
        future.add_done_callback(lambda done: self._committed(done, len(batch)))

    def _committed(self, done: asyncio.Future[None], count: int) -> None:
        self._flushing = False
        error = done.exception()
        if error is not None:
            self._failed = True
            self._actions.clear()
            self._idle.set()
            self.on_fatal(error)
            return
        self.durable += count
        self.commits += 1
        self.committed_entries += count
        actions = self._actions
        while actions and actions[0][0] <= self.durable:
            actions.popleft()[1]()
        if self._pending:
            self._flush()
        elif not actions:
            self._idle.set()

    async def drain(self) -> None:
        """Wait until every entry is durable and every released action has run."""
        while not self._failed and (self._pending or self._flushing or self._actions):
            if not self._flushing:
                self._flush()
            await self._idle.wait()

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self.journal.close()
