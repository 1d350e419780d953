"""The operator's stage of the black-box pipeline: the real runtime server started as an operator
starts it, each start a real process on a real SQLite journal, judged only by what the operator
sees (did it start, its exit status, its one line, the journal's bytes).

Options out of range must stop the start with one line naming the option; options at the edge
of their range must start. A journal another writer made (a field of the wrong type, an
attempt that is not its call's, a call's attempts out of order, a record whose failure does not
fit it) must be refused, the file left byte for byte as it was, with one line naming the entry
and its problem; a journal this executor writes must start, and a call it shows asked with no
attempt yet gets its first one. Options come both through
`atmostonce serve`'s flags and through a program embedding the server (`embedded`), since the
command line refuses some bad values before the executor sees them.
"""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from atmostonce.arguments import EXIT_BAD_INPUT
from atmostonce.runtime.journal import create_journal, read_journal
from atmostonce.runtime.wire import READY_PREFIX

Entry = dict[str, object]

START_SECONDS = 30.0
"""How long one start may take to listen or to exit before the case counts as hung."""


@dataclass(frozen=True)
class Start:
    """One start of the server and what the operator must see."""

    name: str
    refused: str | None
    """A phrase the one refusal line must hold; None when the server must start."""
    flags: tuple[str, ...] = ()
    """`atmostonce serve` options; used unless `options` is set."""
    options: dict[str, object] | None = None
    """ExecutorConfig fields handed to an embedding program, bypassing the command line."""
    journal: list[Entry] | None = field(default=None)
    """The journal the server starts on (None: a fresh one)."""
    queues: str | None = None
    """A call's key the started server must have given a first attempt, in its journal."""


@dataclass(frozen=True)
class Seen:
    started: bool
    code: int | None
    stderr: str
    changed: bool
    """The journal's bytes differ from what they were before the start."""
    entries: tuple[Entry, ...] = ()
    """The journal's entries once the server stopped."""


def _policy(tool: str, effect: str, requires: bool | None) -> Entry:
    return {"type": "policy", "at": 0.5, "tool": tool, "effect": effect,
            "requires_approval": requires, "hints": None}


def _ask(call: str, tool: str, effect: str) -> Entry:
    return {"type": "ask", "at": 2.0, "key": f"s1/t1/{call}", "session_id": "s1",
            "turn_id": "t1", "tool_call_id": call, "tool": tool, "arguments": "{}",
            "effect": effect, "requires_approval": False, "source": "tool_policy",
            "approval_deadline": 300.0}


def _attempt(kind: str, call: str, number: int, **more: object) -> Entry:
    return {"type": kind, "at": 3.0, "key": f"s1/t1/{call}",
            "attempt": f"s1/t1/{call}#{number}", "number": number, **more}


def written() -> list[Entry]:
    """A journal as the reference executor writes it: two policies, a session, a read that
    succeeded and a non-idempotent write handed out when the server stopped."""
    return [
        _policy("lookup_order", "read", None),
        _policy("refund", "non_idempotent_write", False),
        {"type": "session", "at": 1.0, "session_id": "s1", "default_effect": None},
        _ask("c1", "lookup_order", "read"),
        _attempt("queued", "c1", 1),
        _attempt("handed", "c1", 1, worker="w1"),
        _attempt("ended", "c1", 1, end="returned", may_still_run=False, output="ok"),
        {"type": "record", "at": 5.0, "key": "s1/t1/c1", "record": "succeeded", "error": "",
         "failure": None, "output": "ok"},
        _ask("c2", "refund", "non_idempotent_write"),
        _attempt("queued", "c2", 1),
        _attempt("handed", "c2", 1, worker="w2"),
    ]


ASK, QUEUED, RECORD = 3, 4, 7
"""Where `written()` holds c1's ask, its first attempt's queueing and its record."""


def _changed(index: int, **fields: object) -> list[Entry]:
    entries = written()
    entries[index] = {**entries[index], **fields}
    return entries


def _without(index: int, name: str) -> list[Entry]:
    entries = written()
    entries[index] = {k: v for k, v in entries[index].items() if k != name}
    return entries


def _asked_then(*attempts: Entry) -> list[Entry]:
    return [*written()[:ASK + 1], *attempts]


def _entry(index: int, kind: str) -> str:
    """How a refusal names the entry at `index` (counted from 0, as the reader counts)."""
    return f"journal entry {index} ({kind})"


STARTS: tuple[Start, ...] = (
    Start("the options at the edge of their range", None,
          flags=("--max-attempts", "1", "--retry-backoff", "0", "--lease", "4.5",
                 "--heartbeat-timeout", "5")),
    Start("a lease as long as the heartbeat timeout", "lease (5.0) must be shorter",
          flags=("--lease", "5", "--heartbeat-timeout", "5")),
    Start("a lease longer than the heartbeat timeout", "lease (6.0) must be shorter",
          flags=("--lease", "6", "--heartbeat-timeout", "5")),
    Start("embedded, options at the edge of their range", None,
          options={"max_attempts": 1, "retry_backoff": 0, "lease": 0.5,
                   "heartbeat_timeout": 0.75}),
    Start("embedded, no attempts at all", "max_attempts must be a whole number >= 1",
          options={"max_attempts": 0}),
    Start("embedded, max_attempts true", "max_attempts must be a whole number >= 1",
          options={"max_attempts": True}),
    Start("embedded, max_attempts a string", "max_attempts must be a whole number >= 1",
          options={"max_attempts": "3"}),
    Start("embedded, a negative backoff", "retry_backoff must be a finite number",
          options={"retry_backoff": -1}),
    Start("embedded, an endless queue timeout", "queue_timeout must be a finite number",
          options={"queue_timeout": float("inf")}),
    Start("embedded, a run timeout that is no number", "run_timeout must be a finite number",
          options={"run_timeout": float("nan")}),
    Start("embedded, an approval deadline true", "approval_deadline must be a finite number",
          options={"approval_deadline": True}),
    Start("embedded, a lease given as a string", "lease must be a finite number",
          options={"lease": "1"}),
    Start("a journal this executor writes", None, journal=written()),
    Start("a call asked whose first attempt was never journaled", None,
          journal=written()[:ASK + 1], queues="s1/t1/c1"),
    Start("an entry of an unknown type", "journal entry 1: unknown type 'bogus'",
          journal=_changed(1, type="bogus")),
    Start("a policy of an unknown effect", f"{_entry(0, 'policy')}: field 'effect'",
          journal=_changed(0, effect="bogus")),
    Start("a policy whose effect is a list", f"{_entry(0, 'policy')}: field 'effect'",
          journal=_changed(0, effect=["read"])),
    Start("a policy without an effect but with a deadline",
          f"{_entry(0, 'policy')}: approval_deadline is set but the effect is null",
          journal=_changed(0, effect=None, approval_deadline=30.0)),
    Start("an ask whose turn is a number",
          f"{_entry(ASK, 'ask')}: field 'turn_id' must be a string, got int",
          journal=_changed(ASK, turn_id=7)),
    Start("an ask without its turn", f"{_entry(ASK, 'ask')}: missing field 'turn_id'",
          journal=_without(ASK, "turn_id")),
    Start("an ask whose ids make no key", f"{_entry(ASK, 'ask')}:",
          journal=_changed(ASK, turn_id="t/1", key="s1/t/1/c1")),
    Start("an ask whose every id makes no key", f"{_entry(ASK, 'ask')}: flow_id 's/1' contains",
          journal=_changed(ASK, session_id="s/1", turn_id="t/1", tool_call_id="c/1",
                           key="s/1/t/1/c/1")),
    Start("an ask whose key sorts after its call's",
          f"{_entry(ASK, 'ask')}: key 's1/t1/c9' is not the key of its call",
          journal=_changed(ASK, key="s1/t1/c9")),
    Start("an ask whose key sorts before its call's",
          f"{_entry(ASK, 'ask')}: key 's1/t1/c0' is not the key of its call",
          journal=_changed(ASK, key="s1/t1/c0")),
    Start("an ask at a time that is a string",
          f"{_entry(ASK, 'ask')}: field 'at' must be a finite number",
          journal=_changed(ASK, at="2.0")),
    Start("an ask at a time true", f"{_entry(ASK, 'ask')}: field 'at' must be a finite",
          journal=_changed(ASK, at=True)),
    Start("an ask at no time", f"{_entry(ASK, 'ask')}: field 'at' must be a finite",
          journal=_changed(ASK, at=float("nan"))),
    Start("an attempt numbered true",
          f"{_entry(QUEUED, 'queued')}: field 'number' must be a whole number",
          journal=_changed(QUEUED, number=True)),
    Start("an attempt numbered by a string",
          f"{_entry(QUEUED, 'queued')}: field 'number' must be a whole number",
          journal=_changed(QUEUED, number="1")),
    Start("an attempt numbered 0",
          f"{_entry(QUEUED, 'queued')}: field 'number' must be a whole number",
          journal=_changed(QUEUED, number=0)),
    Start("an attempt id of a later attempt",
          f"{_entry(QUEUED, 'queued')}: attempt 's1/t1/c1#2' is not attempt 1",
          journal=_changed(QUEUED, attempt="s1/t1/c1#2")),
    Start("an attempt id of an earlier attempt",
          f"{_entry(QUEUED, 'queued')}: attempt 's1/t1/c1#0' is not attempt 1",
          journal=_changed(QUEUED, attempt="s1/t1/c1#0")),
    Start("a record failed without its failure",
          f"{_entry(RECORD, 'record')}: field 'failure' must be set exactly",
          journal=_changed(RECORD, record="failed")),
    Start("a record succeeded with a failure",
          f"{_entry(RECORD, 'record')}: field 'failure' must be set exactly",
          journal=_changed(RECORD, failure="tool_error")),
    Start("a call's first attempt numbered 2", "attempt 2 of 's1/t1/c1' follows attempt 0",
          journal=_asked_then(_attempt("queued", "c1", 2))),
    Start("a call's attempt 1 queued twice", "attempt 1 of 's1/t1/c1' follows attempt 1",
          journal=_asked_then(_attempt("queued", "c1", 1),
                              _attempt("ended", "c1", 1, end="not_reached",
                                       may_still_run=False, output=""),
                              _attempt("queued", "c1", 1))),
    Start("an attempt never handed out that returned",
          "cannot end returned: it was never handed out",
          journal=_asked_then(_attempt("queued", "c1", 1),
                              _attempt("ended", "c1", 1, end="returned", may_still_run=False,
                                       output="ok"))),
)


def check(executor: str, starts: Sequence[Start] = STARTS,
          on_start: Callable[[Start, Seen], None] = lambda start, seen: None) -> str | None:
    """What the first start that goes wrong showed the operator, or None when every start
    went as it must."""
    for start in starts:
        with tempfile.TemporaryDirectory(prefix="atmostonce-operator-") as scratch:
            seen = _start(start, executor, Path(scratch))
        on_start(start, seen)
        problem = judged(start, seen)
        if problem is not None:
            return f"{start.name}: {problem}"
    return None


def judged(start: Start, seen: Seen) -> str | None:
    """What is wrong with what the operator saw of `start`, or None."""
    lines = [line for line in seen.stderr.splitlines() if line.strip()]
    said = lines[-1] if lines else "nothing"
    if start.refused is None:
        if not seen.started:
            return f"the server did not start (exit {seen.code}): {said}"
        if start.queues is not None and not any(
                e.get("type") == "queued" and e.get("key") == start.queues
                and e.get("number") == 1 for e in seen.entries):
            return f"no first attempt of {start.queues!r} in the journal after the start"
        return None
    if seen.started:
        return "the server started"
    if seen.code != EXIT_BAD_INPUT:
        return f"exit {seen.code}, not {EXIT_BAD_INPUT}: {said}"
    if len(lines) != 1 or start.refused not in said:
        return f"the refusal does not say {start.refused!r} in one line: {seen.stderr.strip()!r}"
    if seen.changed:
        return "the refused journal was changed"
    return None


def _start(start: Start, executor: str, scratch: Path) -> Seen:
    journal = scratch / "journal.sqlite"
    if start.journal is not None:
        _write(journal, start.journal)
    before = _bytes(journal)
    if start.options is not None:
        argv = [sys.executable, "-m", "atmostonce.mutation.embedded", str(journal), executor,
                json.dumps(start.options)]
    else:
        argv = [sys.executable, "-m", "atmostonce.runtime", "serve", "--journal", str(journal),
                "--executor", executor, *start.flags]
    started, code, stderr = _run(argv)
    return Seen(started, code, stderr, _bytes(journal) != before, _entries(journal))


def _write(path: Path, entries: list[Entry]) -> None:
    import sqlite3

    create_journal(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.executemany("INSERT INTO entries (seq, entry) VALUES (?, ?)",
                         [(i, json.dumps(e)) for i, e in enumerate(entries, start=1)])
    finally:
        conn.close()


def _entries(path: Path) -> tuple[Entry, ...]:
    """The journal's entries as its file holds them; none when there is no journal."""
    if not path.exists():
        return ()
    return tuple(read_journal(path))


def _bytes(path: Path) -> str:
    """The sha256 of the journal and its write-ahead log, as they are on disk."""
    digest = hashlib.sha256()
    for part in (path, path.with_name(path.name + "-wal")):
        digest.update(part.read_bytes() if part.exists() else b"-")
    return digest.hexdigest()


def _run(argv: list[str]) -> tuple[bool, int | None, str]:
    """Start the process; stop it (SIGTERM) once it says it listens. Whether it listened, its
    exit status and its stderr; a process that neither listens nor exits in `START_SECONDS`
    is killed and counts as not started, exit None."""
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
    assert child.stdout is not None
    assert child.stderr is not None
    started = False
    deadline = time.monotonic() + START_SECONDS
    out = b""
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while not started:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                return False, None, child.stderr.read().decode(errors="replace")
            chunk = os.read(child.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
            started = READY_PREFIX.encode() in out
    if started and child.poll() is None:
        child.send_signal(signal.SIGTERM)
    try:
        _, err = child.communicate(timeout=START_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        _, err = child.communicate()
    return started, child.returncode, err.decode(errors="replace")
