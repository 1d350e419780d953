"""LangGraph's SQLite checkpoints, as the agent processes write them and the session API and
the server log read them.

Every agent process writes to the one file through `NotingSaver`, LangGraph's own
`AsyncSqliteSaver` that notes (`notes.Notes`) the attempts whose tool messages it is about to
write, just before the write: the moment a result can reach the graph's durable state. Readers
open their own connection each time and read the latest checkpoint of a thread, the graph's
messages as a team reads them (`thread_messages`), or every tool message the file holds
(`durable_attempts`), which confirms the notes at the end of a run.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from atmostonce.engines.appstore import BUSY
from atmostonce.engines.notes import Notes

MESSAGES = "messages"


def artifact_of(message: ToolMessage) -> dict[str, Any]:
    """The attempt, worker and key a tool function put in its message's artifact, or {}."""
    artifact = message.artifact
    return artifact if isinstance(artifact, dict) and "attempt" in artifact else {}


def tool_messages(value: Any) -> Iterator[ToolMessage]:
    """The tool messages in a channel's value or a node's write, however nested in lists."""
    if isinstance(value, ToolMessage):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from tool_messages(item)


class NotingSaver(AsyncSqliteSaver):
    """LangGraph's async SQLite checkpointer, noting each attempt's tool message before it
    first writes it."""

    def __init__(self, conn: aiosqlite.Connection, notes: Notes) -> None:
        super().__init__(conn)
        self.notes = notes
        self._noted: set[str] = set()

    def _delivering(self, values: Iterable[Any]) -> None:
        at = time.monotonic()
        for message in tool_messages(list(values)):
            found = artifact_of(message)
            attempt = str(found.get("attempt", ""))
            if attempt and attempt not in self._noted:
                self._noted.add(attempt)
                self.notes.note("delivering", at=at, attempt=attempt, key=found.get("key"),
                                of=found.get("worker"), ok=message.status == "success")

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        self._delivering(value for channel, value in writes if channel == MESSAGES)
        await super().aput_writes(config, writes, task_id, task_path)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions
                   ) -> RunnableConfig:
        self._delivering([checkpoint["channel_values"].get(MESSAGES, [])])
        return await super().aput(config, checkpoint, metadata, new_versions)


async def open_saver(path: Path, notes: Notes) -> NotingSaver:
    """The checkpointer of one agent process; close its `conn` when done."""
    conn = await aiosqlite.connect(path, timeout=BUSY)
    saver = NotingSaver(conn, notes)
    await saver.setup()
    return saver


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=BUSY, check_same_thread=False)


def thread_messages(path: Path, thread: str) -> list[BaseMessage]:
    """The messages of the thread's latest checkpoint: none before its first."""
    if not path.exists():
        return []
    with closing(_connect(path)) as db:
        found = SqliteSaver(db).get_tuple({"configurable": {"thread_id": thread}})
    if found is None:
        return []
    return list(found.checkpoint["channel_values"].get(MESSAGES, []))


def durable_attempts(path: Path) -> set[str]:
    """Every attempt whose tool message the file holds: in a thread's latest checkpoint or in a
    task's pending writes."""
    if not path.exists():
        return set()
    found: set[str] = set()
    with closing(_connect(path)) as db:
        saver = SqliteSaver(db)
        try:
            threads = [r[0] for r in db.execute("SELECT DISTINCT thread_id FROM checkpoints")]
            rows = db.execute("SELECT type, value FROM writes WHERE channel = ?",
                              (MESSAGES,)).fetchall()
        except sqlite3.OperationalError:
            return found  # no agent process ever set the file up
        values = [saver.serde.loads_typed((kind, value)) for kind, value in rows]
        for thread in threads:
            latest = saver.get_tuple({"configurable": {"thread_id": thread}})
            if latest is not None:
                values.append(latest.checkpoint["channel_values"].get(MESSAGES, []))
    for message in tool_messages(values):
        attempt = artifact_of(message).get("attempt")
        if attempt:
            found.add(str(attempt))
    return found
