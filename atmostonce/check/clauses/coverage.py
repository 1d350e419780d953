"""Which code implements and which tests pin each clause, read from the source itself, and
which property ids the project's text names.

Code names a clause in a docstring or a comment; a test names it with the pytest marker
`@pytest.mark.clause("TC-...")`. Nothing is listed by hand, so the matrix cannot drift. A
property id may be named anywhere (code, tests, benchmarks, examples, the docs), and each one
named must be a property of the registry.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from atmostonce.spec.clauses import Clause, all_clauses
from atmostonce.spec.properties import PROPERTIES

# An id such as TC-REC-EXHAUST-READ, D-7 or F-6; "TC-REC-*" names a family, not an id.
CLAUSE_ID = re.compile(r"\b(?:TC-[A-Z0-9]+(?:-[A-Z0-9]+)*|D-\d+|F-\d+)\b(?!-\*)")
PACKAGE_DIR = Path(__file__).resolve().parents[2]
"""The package's directory, found from this file: importing the package's root would make the
checks depend on the library face it exports, the runtime's included."""
REPO_DIR = PACKAGE_DIR.parent
TESTS_DIR = REPO_DIR / "tests"

# An id such as A-ONE-RECORD or S-RECORD-read-failed; "S-RECORD-*" names a family, not an id.
PROPERTY_ID = re.compile(r"(?<![\w-])[ASE]-[A-Z]{2,}(?:-[A-Z]+)*(?:-[a-z_]+-[a-z_]+)?(?![\w-])")
PROPERTY_TEXTS = (PACKAGE_DIR, TESTS_DIR, REPO_DIR / "benchmarks", REPO_DIR / "examples",
                  REPO_DIR / "README.md", REPO_DIR / "docs")
"""Where property ids are named: files, and folders whose every text file is read."""


@dataclass(frozen=True)
class ClauseRow:
    """One row of the traceability matrix."""

    clause: Clause
    code: tuple[str, ...]
    tests: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        c = self.clause
        row: dict[str, object] = {
            "id": c.id,
            "kind": c.kind.value,
            "anchor": c.anchor,
            "url": c.url,
            "summary": c.summary,
            "code": list(self.code),
            "tests": list(self.tests),
        }
        if c.answer:
            row["answer"] = c.answer
            row["reason"] = c.reason
        return row


def _python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO_DIR).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def named_in_code(root: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    """Clause id -> places in the package that name it (docstrings as module:qualname, comments
    as path:line)."""
    refs: dict[str, set[str]] = defaultdict(set)
    for path in _python_files(root):
        source = path.read_text()
        module = _module_name(path)
        tree = ast.parse(source)
        for qualname, doc in _docstrings(tree):
            target = f"{module}:{qualname}" if qualname else module
            for cid in CLAUSE_ID.findall(doc):
                refs[cid].add(target)
        rel = path.relative_to(REPO_DIR)
        for line, comment in _comments(source):
            for cid in CLAUSE_ID.findall(comment):
                refs[cid].add(f"{rel}:{line}")
    return refs


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _definitions(tree: ast.Module) -> Iterable[tuple[list[str], Definition]]:
    """Every function and class in a module, with the names of the definitions around it."""
    stack: list[tuple[list[str], ast.AST]] = [([], tree)]
    while stack:
        path, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names = [*path, child.name]
                yield names, child
                stack.append((names, child))


def _docstrings(tree: ast.Module) -> Iterable[tuple[str, str]]:
    doc = ast.get_docstring(tree)
    if doc:
        yield "", doc
    for names, node in _definitions(tree):
        node_doc = ast.get_docstring(node)
        if node_doc:
            yield ".".join(names), node_doc


def _comments(source: str) -> Iterable[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def pinned_by_tests(root: Path = TESTS_DIR) -> dict[str, set[str]]:
    """Clause id -> tests carrying `@pytest.mark.clause(...)` with it, as pytest node ids."""
    refs: dict[str, set[str]] = defaultdict(set)
    if not root.is_dir():
        return refs
    for path in _python_files(root):
        rel = path.relative_to(REPO_DIR)
        for names, node in _definitions(ast.parse(path.read_text())):
            for cid in _marked_clauses(node.decorator_list):
                refs[cid].add(f"{rel}::{'::'.join(names)}")
    return refs


def _marked_clauses(decorators: list[ast.expr]) -> Iterable[str]:
    for decorator in decorators:
        if not isinstance(decorator, ast.Call):
            continue
        func = decorator.func
        if isinstance(func, ast.Attribute) and func.attr == "clause":
            for arg in decorator.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield arg.value


def matrix(
    clauses: Iterable[Clause] | None = None,
    code: Mapping[str, set[str]] | None = None,
    tests: Mapping[str, set[str]] | None = None,
) -> list[ClauseRow]:
    """The traceability matrix: each clause with the code and tests that name it."""
    code = named_in_code() if code is None else code
    tests = pinned_by_tests() if tests is None else tests
    return [
        ClauseRow(c, tuple(sorted(code.get(c.id, ()))), tuple(sorted(tests.get(c.id, ()))))
        for c in (all_clauses() if clauses is None else clauses)
    ]


def unknown_ids(
    code: Mapping[str, set[str]], tests: Mapping[str, set[str]]
) -> dict[str, set[str]]:
    """Ids named in code or tests that the registry does not know: typos, or a clause removed."""
    known = {c.id for c in all_clauses()}
    stray: dict[str, set[str]] = defaultdict(set)
    for refs in (code, tests):
        for cid, places in refs.items():
            if cid not in known:
                stray[cid].update(places)
    return stray


def property_ids_named(roots: Iterable[Path] | None = None) -> dict[str, set[str]]:
    """Property id -> the places (path:line) whose text names it, in `roots` (files or folders;
    by default `PROPERTY_TEXTS`, those of them that exist)."""
    refs: dict[str, set[str]] = defaultdict(set)
    for path in _text_files(PROPERTY_TEXTS if roots is None else roots):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        place = path.relative_to(REPO_DIR) if path.is_relative_to(REPO_DIR) else path
        for number, line in enumerate(text.splitlines(), start=1):
            for pid in PROPERTY_ID.findall(line):
                refs[pid].add(f"{place}:{number}")
    return refs


def _text_files(roots: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        if root.is_file():
            files.append(root)
        elif root.is_dir():
            files += (p for p in root.rglob("*")
                      if p.is_file() and "__pycache__" not in p.parts)
    return sorted(files)


def unknown_property_ids(named: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Property ids named somewhere that the registry does not define: typos, or a property
    removed."""
    return {pid: places for pid, places in named.items() if pid not in PROPERTIES}
