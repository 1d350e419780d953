"""Looking ids up: `atmostonce clauses ID ...` prints what the ids in verify's output mean: a
clause of the page, a decision (D-N) or finding (F-N) of the spec, or a property."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from atmostonce.check.clauses.coverage import ClauseRow
from atmostonce.spec.errors import SpecError
from atmostonce.spec.properties import PROPERTIES, Property


def select(rows: Sequence[ClauseRow], ids: Sequence[str]
           ) -> tuple[list[ClauseRow], list[Property]]:
    """The clause rows and the properties `ids` name, in the order given; SpecError, one line,
    for an id that is neither, with the closest known ids."""
    by_id = {row.clause.id: row for row in rows}
    clauses: list[ClauseRow] = []
    properties: list[Property] = []
    for given in ids:
        wanted = given.strip().upper()
        wanted = wanted.removesuffix("'S")
        if wanted in by_id:
            clauses.append(by_id[wanted])
        elif wanted in PROPERTIES:
            properties.append(PROPERTIES[wanted])
        else:
            close = difflib.get_close_matches(wanted, [*by_id, *PROPERTIES], n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else \
                "; `atmostonce clauses` lists every clause"
            raise SpecError(f"{given!r} is no clause, decision, finding or property id{hint}")
    return clauses, properties


def property_lines(found: Property) -> list[str]:
    """A property as `atmostonce clauses ID` prints it."""
    return [f"{found.id}  [{found.kind.value} property]", f"  {found.summary}",
            f"  clauses: {', '.join(found.clauses) or '(none)'}"]
