"""One history (`atmostonce.check.history.entries`) out of everything a chaos run saw: its clients,
the engine's server log, the effect ledger and the nemesis's fault log.

All four read the same clock, so merging them is sorting by time, once each observation stands
at a moment that is true for it:

- a request is stamped when it was sent and when its answer came; what a snapshot shows in
  progress stands at the send (it was so at least until the server read it, and never before
  the call was asked), what it shows final stands at the answer (it was so by then);
- an answer the server took stands at the moment the server log says it took it, so that no
  hand-out it allowed comes before it (D-7); an answer it refused stands at its reply;
- a re-subscription replays the records made before (`past`): a replay of what the same
  listener already saw is not a second publication and is left out (TC-REC-1);
- a run ends at the earliest of the moments its end was witnessed: the ledger heard it, the
  server (or the proxy) heard its result, its process died; and, on an engine whose pauses
  stop runs (`Limits.pauses_stop_runs`), a run whose process was paused longer than the
  lease can take no effect past the lease (the ledger refuses its writes and the worker
  stops it on waking, D-12), so it ends then at the latest; and, on an engine whose server log
  holds every message that renews a worker's lease (`Limits.renewals_logged`: the hand-out, the
  worker's start, its heartbeats and reconnections), a run ends at the latest a lease after the
  last of them, however the worker was kept from fencing itself in time (a process starved of
  the CPU is one): the ledger refuses its writes past that deadline, which the worker took from
  a message sent no later than the log saw it;
- a server restart stands at the moment its kill was complete and every client had handled
  what the old server sent: everything of the old life comes before it, everything of the
  new one after (D-8).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from atmostonce.chaos.nemesis import FaultLog
from atmostonce.chaos.observations import Observations
from atmostonce.check.history import entries as h
from atmostonce.engines.adapter import RunEndSeen, ServerLog
from atmostonce.runtime.ledger_client import LedgerRun, Write
from atmostonce.spec.keys import build_key
from atmostonce.spec.protocol import ExecutorConfig
from atmostonce.spec.session import MessageRole

FAULT, LEDGER, SERVER, CLIENT = range(4)
"""Ranks that order entries of exactly the same time: causes before what they cause."""
AFTER = 1e-6
"""How far after its ask an in-progress sighting is put when it was sent before the ask."""

_RUN_ENDS = {"returned": h.RunEnd.RETURNED, "tool_failed": h.RunEnd.TOOL_FAILED,
             "stopped": h.RunEnd.STOPPED}
_SAYS_OUTPUT = (h.RunEnd.RETURNED, h.RunEnd.TOOL_FAILED)
"""The ends whose output the ledger keeps: what the tool returned or the failure it reported."""


class _Entries:
    def __init__(self) -> None:
        self.items: list[tuple[float, int, int, h.Entry]] = []

    def put(self, entry: h.Entry, rank: int) -> None:
        self.items.append((entry.at, rank, len(self.items), entry))

    def sorted(self) -> list[h.Entry]:
        self.items.sort(key=lambda item: item[:3])
        return [entry for _, _, _, entry in self.items]


def build_history(obs: Observations, faults: FaultLog, log: ServerLog, runs: Sequence[LedgerRun],
                  writes: Sequence[Write], config: ExecutorConfig, end: float,
                  pauses_stop_runs: bool = True, renewals_logged: bool = False) -> list[h.Entry]:
    """Every entry of the run, in order (see the module docstring); `end` is when the run
    ended, the moment of anything whose moment is unknown."""
    out = _Entries()
    _client(out, obs, log, end)
    _ledger(out, runs, writes, log, faults, config, pauses_stop_runs, renewals_logged)
    _faults(out, faults, log)
    for entry in log.entries:
        out.put(entry, SERVER)
    return out.sorted()


def _client(out: _Entries, obs: Observations, log: ServerLog, end: float) -> None:
    asked: dict[str, float] = {}
    acked = {a.key: a.acked for a in obs.acked}
    for entry in obs.entries:
        if isinstance(entry, h.CallAsked):
            asked[entry.key] = entry.at
            if entry.key in acked:
                entry = replace(entry, taken_by=acked[entry.key])
        out.put(entry, CLIENT)
    server_takes = any(isinstance(e, h.ApprovalAnswered) for e in log.entries)
    for a in obs.answers:
        if a.accepted is None or a.replied is None:
            continue
        if a.accepted and server_takes:
            continue
        out.put(h.ApprovalAnswered(a.sent if a.accepted else a.replied, a.key, a.approve,
                                   a.accepted, a.text), CLIENT)
    _events(out, obs)
    _snapshots(out, obs, asked)
    _user_messages(out, obs, end)


def _events(out: _Entries, obs: Observations) -> None:
    first: dict[str, dict[tuple[str, str, str], int]] = defaultdict(dict)
    for event in sorted(obs.events, key=lambda e: e.at):
        listener, generation = event.stream
        mark = (event.key, event.status.value, event.error)
        seen = first[listener]
        earlier = seen.get(mark)
        if earlier is not None and earlier < generation:
            continue
        seen.setdefault(mark, generation)
        out.put(h.RecordPublished(event.at, event.key, event.status, event.error), CLIENT)


def _snapshots(out: _Entries, obs: Observations, asked: dict[str, float]) -> None:
    sightings: list[tuple[float, int, h.SnapshotSeen]] = []
    for snap in obs.snapshots:
        for view in snap.calls:
            key = build_key(snap.session_id, view.turn_id, view.tool_call_id)
            if view.status.final:
                at = snap.replied
            else:
                at = max(snap.sent, asked.get(key, -math.inf) + AFTER)
            sightings.append((at, len(sightings),
                              h.SnapshotSeen(at, key, view.status, view.error,
                                             view.idempotency_key, h.unreached_of(view),
                                             snap.results.get(key, ()), h.kept_of(view),
                                             h.progress_of(view))))
    sightings.sort(key=lambda s: s[:2])
    last: dict[str, tuple[str, str, str, tuple[str, ...] | None]] = {}
    for _, _, seen in sightings:
        mark = (seen.status.value, seen.error, seen.idempotency_key, seen.results)
        if last.get(seen.key) != mark:
            last[seen.key] = mark
            out.put(seen, CLIENT)


def _user_messages(out: _Entries, obs: Observations, end: float) -> None:
    """The user messages the sessions hold at the end, each at the moment it was sent: the
    history's truth, including reports whose reply a crash swallowed (TC-RCN-ONCE)."""
    sent_at: dict[tuple[str, str], float] = {}
    for send in obs.sends:
        sent_at.setdefault((send.session_id, send.text), send.sent)
    for session_id, snapshot in obs.final.items():
        for message in snapshot.messages:
            if message.role is MessageRole.USER:
                at = sent_at.get((session_id, message.text), end)
                out.put(h.UserMessageSent(at, session_id, message.text, True), CLIENT)


def _ledger(out: _Entries, runs: Sequence[LedgerRun], writes: Sequence[Write], log: ServerLog,
            faults: FaultLog, config: ExecutorConfig, pauses_stop_runs: bool,
            renewals_logged: bool) -> None:
    call_of = {e.attempt: e.call for e in log.entries if isinstance(e, h.HandedOut)}
    renewed = _renewals(log) if renewals_logged else None
    witnessed: dict[tuple[str, str], list[RunEndSeen]] = defaultdict(list)
    for seen in log.run_ends:
        witnessed[(seen.worker, seen.attempt)].append(seen)
    by_run: dict[tuple[str, str], list[Write]] = defaultdict(list)
    for write in writes:
        by_run[(write.worker, write.attempt)].append(write)
    deaths, pauses = _process_faults(faults)
    for number, run in enumerate(sorted(runs, key=lambda r: r.started), start=1):
        where = (run.worker, run.attempt)
        out.put(h.RunStarted(run.started, number, run.worker, run.attempt, run.key, run.tool,
                             call_of.get(run.attempt, run.key)), LEDGER)
        for write in by_run.get(where, ()):
            if not write.fenced:
                out.put(h.EffectApplied(write.at, number, write.key, write.applied), LEDGER)
        heard = None if renewed is None else max(renewed[0].get(where, run.started),
                                                 renewed[1].get(run.worker, run.started))
        ended = run_end(run, witnessed.get(where, ()), deaths.get(run.worker),
                        pauses.get(run.worker, ()) if pauses_stop_runs else (), config.lease,
                        heard)
        if ended is not None:
            output = run.output if run.ended is not None and ended[1] in _SAYS_OUTPUT else None
            out.put(h.RunEnded(ended[0], number, ended[1], output), LEDGER)


def _renewals(log: ServerLog) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
    """The last moment the server log shows each (worker, attempt) renewing its lease (its
    hand-out, start or heartbeat), and each worker's last reconnection."""
    by_run: dict[tuple[str, str], float] = {}
    by_worker: dict[str, float] = {}
    for e in log.entries:
        if isinstance(e, h.HandedOut | h.StartDelivered | h.HeartbeatDelivered):
            where = (e.worker, e.attempt)
            by_run[where] = max(by_run.get(where, e.at), e.at)
        elif isinstance(e, h.WorkerConnected):
            by_worker[e.worker] = max(by_worker.get(e.worker, e.at), e.at)
    return by_run, by_worker


def _process_faults(faults: FaultLog) -> tuple[dict[str, float],
                                               dict[str, list[tuple[float, float | None]]]]:
    """When each worker name's process died (killed, or ended itself), and its pauses."""
    deaths: dict[str, float] = {}
    pauses: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
    for fault in faults.faults:
        for name in fault.names:
            if fault.kind in ("kill", "exit"):
                deaths.setdefault(name, fault.start)
            elif fault.kind == "pause":
                pauses[name].append((fault.start, fault.end))
    return deaths, pauses


def run_end(run: LedgerRun, witnessed: Iterable[RunEndSeen], death: float | None,
            pauses: Iterable[tuple[float, float | None]], lease: float,
            heard: float | None = None) -> tuple[float, h.RunEnd] | None:
    """When and how a run ended, from every witness of its end (see the module docstring);
    None while nothing says it ended. `heard` is the last moment the server log shows the run's
    lease renewed, on an engine whose log holds every renewal."""
    moments: list[float] = []
    kind: h.RunEnd | None = None
    if run.ended is not None:
        moments.append(run.ended)
        kind = _RUN_ENDS.get(run.end or "", h.RunEnd.STOPPED)
    for seen in witnessed:
        if seen.at >= run.started:
            moments.append(seen.at)
            if kind is None and seen.ok is not None:
                kind = h.RunEnd.RETURNED if seen.ok else h.RunEnd.TOOL_FAILED
    if run.ended is None and death is not None and death >= run.started:
        moments.append(death)
        kind = kind or h.RunEnd.KILLED
    if kind in (None, h.RunEnd.STOPPED, h.RunEnd.KILLED):
        for start, stop in pauses:
            if start >= run.started and (stop is None or stop - start >= lease):
                moments.append(start + lease)
        if heard is not None:
            moments.append(heard + lease)
    if not moments:
        return None
    return min(moments), kind or h.RunEnd.STOPPED


def _faults(out: _Entries, faults: FaultLog, log: ServerLog) -> None:
    for fault in faults.faults:
        for name in fault.names:
            if fault.kind == "kill":
                out.put(h.WorkerCrashed(fault.start, name), FAULT)
            elif fault.kind.startswith("partition"):
                out.put(h.WorkerCut(fault.start, name), FAULT)
                if fault.end is not None:
                    out.put(h.WorkerHealed(fault.end, name), FAULT)
    for boundary in faults.restarts:
        out.put(h.ServerRestarted(boundary, sum(1 for t in log.durable if t < boundary)), FAULT)
