"""docs/executor-requirements.md stays true where that is mechanical: every text the checks
compare appears in it verbatim, every clause id it cites is one `atmostonce clauses --json`
lists, every property id one the spec defines, every `file:function` it names exists, every
event and command of the protocol is in it, and the README links it."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
from functools import cache
from pathlib import Path

import pytest

from atmostonce import cli
from atmostonce.check.clauses.coverage import PROPERTY_ID
from atmostonce.check.history.records import TOOL_ERROR_TEXT
from atmostonce.spec import protocol
from atmostonce.spec.properties import PROPERTIES
from atmostonce.spec.records import (
    DID_NOT_RUN_PREFIX,
    OUTCOME_UNKNOWN_ERROR,
    FailureKind,
    RejectReason,
    failure_text,
    reject_text,
)
from atmostonce.spec.session import MAY_STILL_BE_RUNNING_TOOL_RESULT, OUTCOME_UNKNOWN_TOOL_RESULT

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "executor-requirements.md"
TEXT = DOC.read_text()

COMPARED = {
    **{f"failure_text({kind.name})": failure_text(kind) for kind in FailureKind},
    **{f"reject_text({reason.name})": reject_text(reason) for reason in RejectReason},
    "DID_NOT_RUN_PREFIX": DID_NOT_RUN_PREFIX,
    "TOOL_ERROR_TEXT": TOOL_ERROR_TEXT,
    "OUTCOME_UNKNOWN_TOOL_RESULT": OUTCOME_UNKNOWN_TOOL_RESULT,
    "MAY_STILL_BE_RUNNING_TOOL_RESULT": MAY_STILL_BE_RUNNING_TOOL_RESULT,
    "OUTCOME_UNKNOWN_ERROR": OUTCOME_UNKNOWN_ERROR,
}
"""The texts conformance, the history checkers and reconcile compare, from the code."""

REFERENCE = re.compile(r"`(atmostonce/[\w/]+\.py):([\w.]+)`")
CLAUSE = re.compile(r"\b(?:TC-[A-Z0-9]+(?:-[A-Z0-9]+)*|D-\d+|F-\d+)\b")


@pytest.mark.parametrize("name", sorted(COMPARED))
def test_every_compared_text_is_in_the_doc_verbatim(name: str) -> None:
    assert f"`{COMPARED[name]}`" in TEXT, f"{name}: {COMPARED[name]!r} is not in {DOC.name}"


@cache
def _clause_ids() -> frozenset[str]:
    """The ids `atmostonce clauses --json` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["clauses", "--json"]) == 0
    return frozenset(row["id"] for row in json.loads(out.getvalue()))


def test_every_cited_clause_id_exists() -> None:
    cited = set(CLAUSE.findall(TEXT))
    assert cited, "the doc cites no clause"
    assert cited <= _clause_ids(), sorted(cited - _clause_ids())


def test_every_cited_property_id_exists() -> None:
    cited = set(PROPERTY_ID.findall(TEXT))
    assert cited, "the doc cites no property"
    assert cited <= set(PROPERTIES), sorted(cited - set(PROPERTIES))


def _defines(path: Path, dotted: str) -> bool:
    """Whether the module at `path` defines `dotted` (a function, class, method or name)."""
    body: list[ast.stmt] = ast.parse(path.read_text()).body
    for part in dotted.split("."):
        found: ast.stmt | None = None
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and \
                    node.name == part:
                found = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    found = node
        if found is None:
            return False
        body = found.body if isinstance(found, ast.ClassDef) else []
    return True


def test_every_named_function_exists() -> None:
    named = REFERENCE.findall(TEXT)
    assert len(named) > 30
    missing = [f"{file}:{name}" for file, name in named
               if not (ROOT / file).is_file() or not _defines(ROOT / file, name)]
    assert not missing, missing


def test_the_reference_check_catches_a_name_that_does_not_exist() -> None:
    assert _defines(ROOT / "atmostonce/check/lockstep/conformance.py", "Lockstep.compare")
    assert not _defines(ROOT / "atmostonce/check/lockstep/conformance.py", "Lockstep.compared")
    assert not _defines(ROOT / "atmostonce/check/lockstep/conformance.py", "replay_schedules.x")


def test_every_event_and_command_of_the_protocol_is_documented() -> None:
    kinds = [cls.__name__ for cls in vars(protocol).values()
             if isinstance(cls, type) and cls not in (protocol.Event, protocol.Command)
             and issubclass(cls, protocol.Event | protocol.Command)]
    assert len(kinds) > 15
    missing = [name for name in kinds if f"`{name}`" not in TEXT]
    assert not missing, missing


def test_the_readme_links_the_doc() -> None:
    assert "docs/executor-requirements.md" in (ROOT / "README.md").read_text()
