"""Lost records: what a client was shown and the engine no longer holds at the end of a run.

Every answer the session API gives comes after what it shows is durable, so none of this may
ever happen, whatever crashed (TC-REC-1): a record seen in an event or a snapshot must be in
the final snapshot with the same status and error; an acknowledged ask must be there as a
call; a user message the session accepted must be in its history (TC-RCN-TELL); an approval the
server accepted must be in its log. The same holds for the effect ledger: a write on record
whose run start is not is an acknowledged run start the ledger lost. Each lost thing carries
the positions of its call's history entries, with the server restarts among them: the excerpt
that shows what was acknowledged and where it went.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from atmostonce.chaos.observations import Observations
from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import ServerLog
from atmostonce.runtime.ledger_client import LedgerRun, Write
from atmostonce.spec.keys import build_key
from atmostonce.spec.session import MessageRole, ToolCallStatus


@dataclass(frozen=True)
class LostRecord:
    """Something a client was shown at `at` that the end of the run contradicts."""

    kind: str
    """record, ask, user_message, approval or run_start."""
    key: str
    seen: str
    now: str
    at: float
    positions: tuple[int, ...] = ()
    """The history entries of the call (or session), with the server restarts among them."""

    def line(self) -> str:
        return f"{self.kind} {self.key}: seen {self.seen}, now {self.now}"

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind, "call": self.key, "seen": self.seen, "now": self.now,
                "seen_at": round(self.at, 6), "history": list(self.positions)}


def lost_records(obs: Observations, log: ServerLog, writes: Sequence[Write] = (),
                 runs: Sequence[LedgerRun] = (), entries: Sequence[h.Entry] = ()
                 ) -> list[LostRecord]:
    """Everything seen and lost (see the module docstring), in the order it was seen, each with
    its excerpt of `entries`."""
    final = {build_key(sid, v.turn_id, v.tool_call_id): v
             for sid, snapshot in obs.final.items() for v in snapshot.tool_calls}
    lost: list[LostRecord] = []
    for key, (status, error, at) in _first_records(obs).items():
        if _session(key) not in obs.final:
            continue
        view = final.get(key)
        if view is None:
            lost.append(LostRecord("record", key, status.value, "no such call", at))
        elif view.status is not status or view.error != error:
            lost.append(LostRecord("record", key, _text(status, error),
                                   _text(view.status, view.error), at))
    for ask in obs.acked:
        if ask.session_id in obs.final and ask.key not in final:
            lost.append(LostRecord("ask", ask.key, "acknowledged", "no such call", ask.acked))
    held = {(sid, m.text) for sid, snapshot in obs.final.items() for m in snapshot.messages
            if m.role is MessageRole.USER}
    for send in obs.sends:
        if send.accepted and send.session_id in obs.final and \
                (send.session_id, send.text) not in held:
            lost.append(LostRecord("user_message", send.session_id, "accepted",
                                   "not in the history", send.replied or send.sent))
    taken = {e.key for e in log.entries if isinstance(e, h.ApprovalAnswered) and e.ok}
    if taken:
        for answer in obs.answers:
            if answer.accepted and answer.key not in taken:
                lost.append(LostRecord("approval", answer.key, "accepted",
                                       "not in the server's log", answer.replied or answer.sent))
    started = {(r.worker, r.attempt) for r in runs}
    for write in writes:
        if (write.worker, write.attempt) not in started:
            lost.append(LostRecord("run_start", write.key, f"a write of {write.attempt} at "
                                   f"{write.worker}", "no run start on record", write.at))
    lost.sort(key=lambda item: item.at)
    return [dataclasses.replace(item, positions=excerpt(entries, item.key)) for item in lost]


EXCERPT = 16
"""The most history entries a lost thing's excerpt shows (the latest ones)."""


def excerpt(entries: Sequence[h.Entry], key: str) -> tuple[int, ...]:
    """Positions of the entries about `key` (a call's key, or a session id), and of the server
    restarts between the first and the last of them."""
    mine = [i for i, e in enumerate(entries)
            if getattr(e, "key", None) == key or getattr(e, "session_id", None) == key]
    if not mine:
        return ()
    restarts = [i for i in range(mine[0], mine[-1] + 1)
                if isinstance(entries[i], h.ServerRestarted)]
    return tuple(sorted({*mine, *restarts}))[-EXCERPT:]


def _first_records(obs: Observations) -> dict[str, tuple[ToolCallStatus, str, float]]:
    """Each call's record as a client first saw it, from events and snapshots."""
    first: dict[str, tuple[ToolCallStatus, str, float]] = {}
    seen = [(e.at, e.key, e.status, e.error) for e in obs.events]
    seen += [(s.replied, build_key(s.session_id, v.turn_id, v.tool_call_id), v.status, v.error)
             for s in obs.snapshots for v in s.calls if v.status.final]
    for at, key, status, error in sorted(seen, key=lambda item: item[0]):
        first.setdefault(key, (status, error, at))
    return first


def _session(key: str) -> str:
    return key.partition("/")[0]


def _text(status: ToolCallStatus, error: str) -> str:
    return f"{status.value} ({error})" if error else status.value
