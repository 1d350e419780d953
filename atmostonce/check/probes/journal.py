"""A corrupt journal is refused with one clear line, probed on fresh executors: a workload makes
the executor persist entries of many kinds (policies with and without hints, three sessions,
asks, answers, attempts queued, handed and ended, a retry, records of several kinds, a user
message, an abandoned run that ended and a worker declared lost), then its own journal,
corrupted one way at a time, goes to `recover` of a fresh executor (D-8). The model's schedules
only ever restart from journals the executor wrote; this feeds it the ones a disk or an
operator can make. First, a new call of each tool in each session must resolve alike on the
executor that wrote the journal and on one rebuilt from it (D-8, D-22).

Entries are opaque JSON objects: the probe groups them by a string field every entry has (or by
key set) and corrupts them knowing only JSON kinds, the spec's enum names and the ids the
protocol showed it (sessions, turns, calls, keys, attempts of go-aheads). So any executor can
meet every requirement:
- no corruption may make `recover` raise anything but SpecError, and its message is one line;
- these must be refused, the message naming the entry's index (0- or 1-based), never calling a
  field that is there missing, nor a non-null value null: a field set to a JSON kind no entry
  of its group holds there (null, bool, number, inf, nan, string, list, object; also one level
  down in objects), a field every entry of its group has removed, the entry replaced by a
  list, the group field set to a list or an unknown string, and a field whose values are all a
  spec enum's names set to an unknown name (each naming the field too); a protocol id emptied,
  an id of the one call its entry names replaced by the same field's id of another call (the
  entry then contradicts itself), and a failure kind taken from a failed record or given to
  one that is not (the spec gives kinds to failed records only);
- a removal or a null may be accepted instead when the rebuilt sessions show just what they
  showed: absent may read as the value the executor would have written;
- an entry naming an attempt of a go-ahead, repeated at the end of the journal (after its call
  moved on), must be refused, or change nothing the sessions show (a replay read as a no-op);
- an entry dropped, duplicated or swapped with the next can be a journal an executor rightly
  accepts (a policy set twice), so only the first rule holds for those.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from atmostonce.check.probes.drive import Drive
from atmostonce.spec.approval import ApprovalState
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, PolicySource, ToolHints, ToolPolicy
from atmostonce.spec.protocol import (
    JSON,
    Answer,
    Ask,
    Connected,
    Executor,
    ExecutorConfig,
    ExecutorFactory,
    Finished,
    GoAhead,
    OpenSession,
    SetPolicy,
    TimerKind,
    UserMessage,
)
from atmostonce.spec.records import AttemptEnd, FailureKind, Record

SESSION, OTHER, FLOORLESS = "journal-probe", "journal-probe-2", "journal-probe-3"
SESSIONS = (SESSION, OTHER, FLOORLESS)
TOOLS = ("lookup", "upsert", "charge", "refund", "hinted", "unregistered")
MAX_CORRUPTIONS = 1000
MAX_PROBLEMS = 50
_ENUMS: tuple[type[enum.Enum], ...] = (EffectClass, PolicySource, ApprovalState, AttemptEnd,
                                       FailureKind, Record)
_REPRESENTATIVES: tuple[tuple[str, JSON], ...] = (
    ("null", None), ("bool", True), ("number", 0.5), ("nonfinite", math.inf),
    ("nonfinite", math.nan), ("string", "?"), ("list", ["?"]), ("object", {"?": 1}))


@dataclass(frozen=True)
class Corruption:
    """One corrupt journal, what was done to it, and what the message must do if refused."""

    what: str
    journal: list[JSON]
    index: int = -1
    field: str = ""
    removed: bool = False
    value: JSON = None
    must_refuse: bool = True
    names_field: bool = True
    may_default: bool = False


def probe_journal(factory: ExecutorFactory, config: ExecutorConfig) -> list[str]:
    """One line per corrupt journal the executor took otherwise than the module says; empty
    when it refused each with one clear line."""
    config = replace(config, fence=True, max_attempts=max(2, config.max_attempts))
    try:
        drive, ids, attempts = _workload(factory, config)
    except SpecError as error:
        return [f"D-8: the journal probe could not drive the executor: {error}"]
    except Exception as error:
        return [f"D-8: the executor failed on the journal probe: {type(error).__name__}: "
                f"{error}"]
    at = drive.clock + 1.0
    journal: list[JSON] = list(drive.journal)
    try:
        pristine = _shown(factory, config, journal, at)
        problems = _resolved_alike(drive, factory(config), journal, at)
    except Exception as error:
        return [f"D-8: recover refused the executor's own journal: {type(error).__name__}: "
                f"{error}"]
    for number, corruption in enumerate(_corruptions(journal, ids, attempts)):
        if number >= MAX_CORRUPTIONS or len(problems) >= MAX_PROBLEMS:
            break
        problem = _judge(factory, config, corruption, at, pristine)
        if problem:
            problems.append(problem)
    return problems


def _shown(factory: ExecutorFactory, config: ExecutorConfig, journal: list[JSON],
           at: float) -> tuple[object, ...]:
    """What both sessions show after a fresh executor recovers `journal`."""
    executor = factory(config)
    executor.recover(list(journal), at)  # type: ignore[arg-type]
    return tuple(executor.snapshot(session) for session in SESSIONS)


def _resolved_alike(drive: Drive, after: Executor, journal: list[JSON], at: float
                    ) -> list[str]:
    """A new call of each tool in each session resolves to the same effect, approval and
    deadline on the executor that wrote the journal and on one rebuilt from it: policies,
    hints and session defaults survive a restart (D-8, D-22)."""
    after.recover(list(journal), at)  # type: ignore[arg-type]
    problems: list[str] = []
    for session in SESSIONS:
        for number, tool in enumerate(TOOLS, start=1):
            turn = f"after-{session}-{number}"
            shown = []
            for executor in (drive.executor, after):
                executor.handle(Ask(at, session, turn, turn, tool))
                view = next(v for v in executor.snapshot(session).tool_calls
                            if v.turn_id == turn)
                effect = view.effect.value if view.effect is not None else None
                shown.append((effect, view.requires_approval, view.approval_deadline))
            if shown[0] != shown[1]:
                problems.append(f"D-8: after recover, a new call of {tool} in session "
                                f"{session} resolves to (effect, approval, deadline) "
                                f"{shown[1]}, on the executor that wrote the journal {shown[0]}")
    return problems


def _workload(factory: ExecutorFactory, config: ExecutorConfig
              ) -> tuple[Drive, dict[str, str], set[str]]:
    """The driven executor, every protocol id it saw with the key of the one call it names
    ("" for a session id, which names many), and the attempts of its go-aheads."""
    drive = Drive(factory(config), SESSION)
    read, nonidem = EffectClass.READ, EffectClass.NON_IDEMPOTENT_WRITE
    drive.send(SetPolicy, "lookup", ToolPolicy(read))
    drive.send(SetPolicy, "upsert", ToolPolicy(EffectClass.IDEMPOTENT_WRITE),
               ToolHints(idempotent=True, destructive=False))
    drive.send(SetPolicy, "charge", ToolPolicy(nonidem, requires_approval=False))
    drive.send(SetPolicy, "refund", ToolPolicy(nonidem, requires_approval=True,
                                               approval_deadline=50.0))
    drive.send(SetPolicy, "hinted", None, ToolHints(read_only=True))
    drive.send(OpenSession, SESSION, None, True)
    drive.send(OpenSession, OTHER, EffectClass.IDEMPOTENT_WRITE, False)
    drive.send(OpenSession, FLOORLESS, nonidem, True)
    ids: dict[str, str] = dict.fromkeys(SESSIONS, "")
    attempts: set[str] = set()
    calls = 0

    def ask(tool: str, session: str = SESSION) -> str:
        nonlocal calls
        calls += 1
        turn, call = f"t{calls}", f"c{calls}"
        drive.send(Ask, session, turn, call, tool, f'{{"n": {calls}}}')
        key = f"{session}/{turn}/{call}"
        ids.update({turn: key, call: key, key: key})
        return key

    def hand(worker: str) -> GoAhead:
        drive.send(Connected, worker)
        go = drive.poll(worker)
        if go is None:
            raise SpecError(f"worker {worker} polled for a queued call and got no go-ahead")
        ids[go.attempt] = go.key
        attempts.add(go.attempt)
        return go

    ask("lookup")
    drive.send(Finished, "w1", hand("w1").attempt, True, "found it")
    ask("upsert")
    drive.send(Finished, "w2", hand("w2").attempt, False, "the service said no")
    drive.requests += 1
    drive.send(Answer, f"probe-{drive.requests}", ask("refund"), True)
    drive.send(Finished, "w3", hand("w3").attempt, True, "refunded")
    drive.requests += 1
    drive.send(Answer, f"probe-{drive.requests}", ask("refund"), False)
    ask("charge")
    go = hand("w4")
    if not drive.fire(TimerKind.RUN_TIMEOUT, go.attempt):
        raise SpecError(f"attempt {go.attempt} got no run timeout")
    drive.send(Finished, "w4", go.attempt, True, "charged late")
    retried = ask("hinted", OTHER)
    hand("w5")
    drive.fire(TimerKind.HEARTBEAT_TIMEOUT, "w5")
    drive.fire(TimerKind.RETRY_BACKOFF, retried)
    drive.send(Finished, "w6", hand("w6").attempt, True, "found it again")
    ask("charge")
    go = hand("w7")
    if not drive.fire(TimerKind.RUN_TIMEOUT, go.attempt):
        raise SpecError(f"attempt {go.attempt} got no run timeout")
    drive.fire(TimerKind.HEARTBEAT_TIMEOUT, "w7")
    drive.requests += 1
    drive.send(UserMessage, f"probe-{drive.requests}", SESSION, "Note from the order system")
    return drive, ids, attempts


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number" if math.isfinite(value) else "nonfinite"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "object"


def _groups(journal: list[JSON]) -> dict[str, list[int]]:
    """The entries' indexes by their value of a string field every entry has (the one with the
    fewest distinct values above one), or by key set when there is none."""
    objects = [e for e in journal if isinstance(e, dict)]
    shared = set.intersection(*(set(e) for e in objects)) if objects else set()
    candidates = sorted((len({str(e[f]) for e in objects}), f) for f in shared
                        if all(isinstance(e[f], str) for e in objects)
                        and len({str(e[f]) for e in objects}) > 1)
    groups: dict[str, list[int]] = {}
    for index, entry in enumerate(journal):
        assert isinstance(entry, dict)
        name = (f"{candidates[0][1]}={entry[candidates[0][1]]}" if candidates
                else ",".join(sorted(entry)))
        groups.setdefault(name, []).append(index)
    return groups


def _set(journal: list[JSON], index: int, path: tuple[str, ...], value: JSON | None,
         ) -> list[JSON]:
    """A copy of `journal` with the field at `path` of entry `index` set to `value`, or removed
    when `value` is the removal marker."""
    copy = list(journal)
    entry = dict(copy[index])  # type: ignore[arg-type]
    target = entry
    for step in path[:-1]:
        inner = dict(target[step])  # type: ignore[arg-type]
        target[step] = inner
        target = inner
    if value is _REMOVE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    copy[index] = entry
    return copy


_REMOVE: JSON = {"\0remove": True}


def _corruptions(journal: list[JSON], ids: dict[str, str], attempts: set[str]
                 ) -> Iterator[Corruption]:
    groups = _groups(journal)
    group_field = next(iter(groups)).split("=")[0] if "=" in next(iter(groups)) else ""
    for name, members in groups.items():
        yield from _field_corruptions(journal, name, members, ())
        yield from _id_corruptions(journal, name, members, ids)
        yield from _outcome_corruptions(journal, name, members)
        first = members[0]
        if group_field:
            unknowns: tuple[JSON, ...] = (["?"], "\0unknown")
            for value in unknowns:
                yield Corruption(f"{group_field} of entry {first} ({name}) set to {value!r}",
                                 _set(journal, first, (group_field,), value), first,
                                 group_field, value=value)
    for index, entry in enumerate(journal):
        if isinstance(entry, dict) and attempts & {v for v in entry.values()
                                                   if isinstance(v, str)}:
            yield Corruption(f"entry {index}, about an attempt, repeated at the end",
                             [*journal, entry], len(journal), names_field=False,
                             may_default=True)
    for index in range(len(journal)):
        yield Corruption(f"entry {index} replaced by a list", journal[:index] + [["?"]]
                         + journal[index + 1:], index, value=["?"], names_field=False)
        yield Corruption(f"entry {index} dropped", journal[:index] + journal[index + 1:],
                         must_refuse=False)
        yield Corruption(f"entry {index} duplicated", journal[:index + 1] + journal[index:],
                         must_refuse=False)
        if index + 1 < len(journal):
            yield Corruption(f"entries {index} and {index + 1} swapped",
                             journal[:index] + [journal[index + 1], journal[index]]
                             + journal[index + 2:], must_refuse=False)


def _field_corruptions(journal: list[JSON], name: str, members: list[int],
                       path: tuple[str, ...]) -> Iterator[Corruption]:
    """Each field of the group's objects (at `path` inside its entries) removed and replaced by
    each JSON kind never seen there; one level down into object values."""

    def at(index: int) -> dict[str, JSON] | None:
        value: JSON = journal[index]
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        return value if isinstance(value, dict) else None

    holders = [(i, obj) for i in members if (obj := at(i)) is not None]
    fields = sorted({f for _, obj in holders for f in obj})
    where = f"{'.'.join(path)} of " if path else ""
    for field in fields:
        having = [(i, obj) for i, obj in holders if field in obj]
        seen = {_kind(obj[field]) for _, obj in having}
        index = having[0][0]
        label = f"field {field!r} of {where}entry {index} ({name})"
        if len(having) == len(holders) and "null" not in seen:
            yield Corruption(f"{label} removed", _set(journal, index, (*path, field), _REMOVE),
                             index, field, removed=True, may_default=True)
        for kind, value in _REPRESENTATIVES:
            if kind not in seen:
                yield Corruption(f"{label} set to {value!r}",
                                 _set(journal, index, (*path, field), value), index, field,
                                 value=value, may_default=value is None)
        strings = {obj[field] for _, obj in having if isinstance(obj[field], str)}
        if strings and seen <= {"string", "null"} and any(
                strings <= {m.value for m in cls} for cls in _ENUMS):
            index = next(i for i, obj in having if isinstance(obj[field], str))
            yield Corruption(f"field {field!r} of {where}entry {index} ({name}) set to an "
                             "unknown name", _set(journal, index, (*path, field), "unknown"),
                             index, field, value="unknown")
        if not path and "object" in seen:
            yield from _field_corruptions(journal, name, members, (field,))


def _named(entry: JSON, ids: dict[str, str], but: str = "") -> set[str]:
    """The calls the entry's fields (but `but`) hold an id of."""
    if not isinstance(entry, dict):
        return set()
    return {ids[v] for f, v in entry.items() if f != but and isinstance(v, str) and ids.get(v)}


def _id_corruptions(journal: list[JSON], name: str, members: list[int],
                    ids: dict[str, str]) -> Iterator[Corruption]:
    """A field holding a protocol id emptied; and, in an entry naming one call, an id of that
    call replaced by the same field's id of another call, each way once per field."""
    done: set[tuple[str, bool]] = set()
    for i in members:
        entry = journal[i]
        assert isinstance(entry, dict)
        for field, value in sorted(entry.items()):
            if not isinstance(value, str) or value not in ids:
                continue
            if (field, False) not in done:
                done.add((field, False))
                yield Corruption(f"field {field!r} of entry {i} ({name}) emptied",
                                 _set(journal, i, (field,), ""), i, field, value="",
                                 names_field=False)
            if (field, True) in done or _named(entry, ids, field) != {ids[value]}:
                continue
            for j in members:
                other = journal[j]
                assert isinstance(other, dict)
                theirs = other.get(field)
                if (isinstance(theirs, str) and ids.get(theirs)
                        and ids[theirs] != ids[value]
                        and _named(other, ids, field) == {ids[theirs]}):
                    done.add((field, True))
                    for into, source in ((i, theirs), (j, value)):
                        yield Corruption(
                            f"field {field!r} of entry {into} ({name}) set to {source!r}, "
                            "an id of another call", _set(journal, into, (field,), source),
                            into, field, value=source, names_field=False)
                    break


def _outcome_corruptions(journal: list[JSON], name: str, members: list[int]
                         ) -> Iterator[Corruption]:
    """In entries holding a record (a field whose values are all `Record` names) and a failure
    kind (one whose values are `FailureKind` names or null), the kind of a failed one taken
    away and one given to another record: the spec gives a kind to failed records only."""
    entries = [(i, e) for i in members if isinstance(e := journal[i], dict)]
    fields = sorted({f for _, e in entries for f in e})

    def holding(names: set[str], nullable: bool) -> list[str]:
        return [f for f in fields if all(
            f in e and ((isinstance(e[f], str) and e[f] in names) or (nullable and e[f] is None))
            for _, e in entries)]

    failed_name = Record.FAILED.value
    for record in holding({r.value for r in Record}, False):
        for kind in holding({k.value for k in FailureKind}, True):
            failed = [(i, e[kind]) for i, e in entries
                      if e[record] == failed_name and e[kind] is not None]
            other = [i for i, e in entries if e[record] != failed_name and e[kind] is None]
            if not failed or not other:
                continue
            for into, value in ((failed[0][0], None), (other[0], failed[0][1])):
                yield Corruption(f"field {kind!r} of entry {into} ({name}) set to {value!r} "
                                 f"against its {record!r}", _set(journal, into, (kind,), value),
                                 into, kind, value=value, names_field=False)


def _judge(factory: ExecutorFactory, config: ExecutorConfig, corruption: Corruption,
           at: float, pristine: tuple[object, ...]) -> str:
    """The problem with what `recover` did with the corrupt journal, or ""."""
    executor = factory(config)
    try:
        executor.recover(corruption.journal, at)  # type: ignore[arg-type]
    except SpecError as error:
        message = str(error)
        if "\n" in message:
            return f"D-8: for the journal with {corruption.what}, recover's error is not one " \
                   f"line: {message!r}"
        return _message_problem(corruption, message) if corruption.must_refuse else ""
    except Exception as error:
        return (f"D-8: recover of the journal with {corruption.what} raised "
                f"{type(error).__name__}: {error}, not a one-line SpecError")
    if not corruption.must_refuse:
        return ""
    if corruption.may_default:
        try:
            if tuple(executor.snapshot(session) for session in SESSIONS) == pristine:
                return ""
        except Exception as error:
            return (f"D-8: after recover took the journal with {corruption.what}, snapshot "
                    f"raised {type(error).__name__}: {error}")
    return f"D-8: recover accepted the journal with {corruption.what}"


def _message_problem(corruption: Corruption, message: str) -> str:
    says = f"D-8: for the journal with {corruption.what}, recover's error {message!r}"
    index = corruption.index
    if not re.search(rf"(?<![\w.])({index}|{index + 1})(?![\w.])", message):
        return f"{says} does not name the entry ({index}, or {index + 1} counting from 1)"
    if corruption.names_field and not re.search(rf"(?<!\w){re.escape(corruption.field)}(?!\w)",
                                                message):
        return f"{says} does not name the field {corruption.field!r}"
    if not corruption.removed and corruption.field and "missing" in message:
        return f"{says} calls the field missing, but it is there"
    if "NoneType" in message or (corruption.value is not None and "got null" in message):
        return f"{says} does not name the kind of the value in JSON's terms"
    return ""
