"""The mutation score: which mutants were killed, by which stage, which timed out, which are
equivalent (inside a deferred annotation, or argued in the equivalence file) and which
survived; per module and in all. The score is the killed and timed-out mutants over every
mutant that is not equivalent: a mutant that makes verify hang is caught by its user too.
"""

from __future__ import annotations

import collections
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from atmostonce.mutation.generate import Mutant
from atmostonce.mutation.pipeline import TIMEOUT, UNTRIED, Outcome
from atmostonce.spec.errors import SpecError

ANNOTATION = ("the change is inside a type annotation of a module with `from __future__ import "
              "annotations`: annotations stay strings nobody evaluates")


@dataclass(frozen=True)
class Equivalent:
    id: str
    line: str
    why: str


def load_equivalents(path: Path, kind: str = "equivalent") -> dict[str, Equivalent]:
    """The argued mutants of one kind (`equivalent`, or `unobservable` from outside), by id;
    SpecError, one line, for a file that is not the expected TOML."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise SpecError(f"cannot read the {kind} mutants {path}: {error}") from None
    found: dict[str, Equivalent] = {}
    for i, entry in enumerate(data.get(kind, [])):
        if not isinstance(entry, dict) or set(entry) != {"id", "line", "why"} or not all(
                isinstance(v, str) and v for v in entry.values()):
            raise SpecError(f"{path}: {kind} entry {i + 1} needs exactly id, line and why, "
                            "each a non-empty string")
        found[entry["id"]] = Equivalent(entry["id"], entry["line"], entry["why"])
    return found


@dataclass
class Tally:
    mutants: int = 0
    killed: int = 0
    timeout: int = 0
    survived: int = 0
    equivalent: int = 0
    unobservable: int = 0
    """Survivors argued not observable from outside (black-box runs): still survivors."""

    @property
    def score(self) -> float:
        judged = self.mutants - self.equivalent
        return 1.0 if judged == 0 else (self.killed + self.timeout) / judged

    def as_json(self) -> dict[str, object]:
        return {"mutants": self.mutants, "killed": self.killed, "timeout": self.timeout,
                "survived": self.survived, "equivalent": self.equivalent,
                "unobservable": self.unobservable, "score": round(self.score, 4)}


@dataclass
class Score:
    total: Tally = field(default_factory=Tally)
    modules: dict[str, Tally] = field(default_factory=dict)
    killed_by: collections.Counter[str] = field(default_factory=collections.Counter)
    survivors: list[Outcome] = field(default_factory=list)
    untried: list[Mutant] = field(default_factory=list)
    """Mutants with no outcome yet (or whose trial could not be made): in no count."""
    stale: list[Equivalent] = field(default_factory=list)
    """Equivalence arguments whose line no longer reads as it did: not counted."""
    equivalents: list[tuple[Mutant, str]] = field(default_factory=list)
    unobservable: list[tuple[Outcome, str]] = field(default_factory=list)
    """Survivors with an argument that nothing outside the executor tells them apart."""
    seconds: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {**self.total.as_json(),
                "per_module": {m: t.as_json() for m, t in sorted(self.modules.items())},
                "killed_by_stage": dict(self.killed_by.most_common()),
                "survivors": [{"id": o.mutant.id, "line": o.mutant.line, "text": o.mutant.text,
                               "unobservable": any(o is u for u, _ in self.unobservable)}
                              for o in self.survivors],
                "untried": len(self.untried),
                "stale_equivalents": [e.id for e in self.stale],
                "trial_seconds": round(self.seconds, 1)}


def score(mutants: Sequence[Mutant], outcomes: Iterable[Outcome],
          equivalents: dict[str, Equivalent],
          unobservable: dict[str, Equivalent] | None = None) -> Score:
    """Every mutant counted once: equivalent first, then by its outcome; a mutant with no
    outcome is not counted at all (the pipeline did not get to it). A survivor argued in
    `unobservable` stays a survivor, counted among the argued ones too."""
    by_id = {o.mutant.id: o for o in outcomes}
    result = Score()
    for mutant in mutants:
        argued = equivalents.get(mutant.id)
        if argued is not None and argued.line != mutant.text:
            result.stale.append(argued)
            argued = None
        outcome = by_id.get(mutant.id)
        if outcome is not None and outcome.killed_by == UNTRIED:
            outcome = None
        if argued is None and not mutant.annotation and outcome is None:
            result.untried.append(mutant)
            continue
        tally = result.modules.setdefault(mutant.module, Tally())
        for t in (tally, result.total):
            t.mutants += 1
        if argued is not None or mutant.annotation:
            why = argued.why if argued is not None else ANNOTATION
            result.equivalents.append((mutant, why))
            for t in (tally, result.total):
                t.equivalent += 1
            continue
        assert outcome is not None
        result.seconds += outcome.seconds
        if outcome.killed_by is None:
            result.survivors.append(outcome)
            for t in (tally, result.total):
                t.survived += 1
            hidden = (unobservable or {}).get(mutant.id)
            if hidden is not None and hidden.line != mutant.text:
                result.stale.append(hidden)
            elif hidden is not None:
                result.unobservable.append((outcome, hidden.why))
                for t in (tally, result.total):
                    t.unobservable += 1
        elif outcome.killed_by == TIMEOUT:
            for t in (tally, result.total):
                t.timeout += 1
        else:
            result.killed_by[outcome.killed_by] += 1
            for t in (tally, result.total):
                t.killed += 1
    return result
