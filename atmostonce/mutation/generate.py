"""The mutants of an executor's modules, as cosmic-ray's operators make them: each operator's
every occurrence in each module, one mutation per mutant (first order). A mutant is named by
its module, operator and occurrence, and carries the line it changes, so a result or an
equivalence argument recorded for it can be told stale once the code moves.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from atmostonce.spec.errors import SpecError


@dataclass(frozen=True)
class Mutant:
    module: str
    """The mutated file, relative to the package root's parent (`atmostonce/executor/x.py`)."""
    operator: str
    occurrence: int
    line: int
    text: str
    """The source line the mutation changes, stripped."""
    annotation: bool
    """The mutation lies inside a type annotation of a module that never evaluates them."""
    source_sha: str
    """The sha256 of the unmutated module: results for another version do not count."""

    @property
    def id(self) -> str:
        return f"{self.module}:{self.operator}:{self.occurrence}"


def executor_modules(package: Path) -> list[Path]:
    """The executor's modules: every `*.py` of the package but `NOT_THE_EXECUTOR`."""
    if not package.is_dir():
        raise SpecError(f"no package directory {package}")
    return [p for p in sorted(package.glob("*.py")) if p.name not in NOT_THE_EXECUTOR]


NOT_THE_EXECUTOR = ("mutants.py", "before_upgrade.py", "stdio.py", "__init__.py")
"""Modules of the package that `verify` never runs as the reference executor: its deliberately
broken variants (`mutants.py`, checked by `atmostonce mutants`), the restart rule of a server
before an upgrade (`before_upgrade.py`, D-31, which only the upgrade's tests run), the pipe
server that serves any Python executor to `--executor-cmd` (`stdio.py`, pinned by its own
tests) and the `__init__` re-exports."""


def mutants(modules: Sequence[Path], root: Path) -> Iterator[Mutant]:
    """Every first-order mutant of the modules; `root` is the directory the module names are
    relative to."""
    from cosmic_ray.ast import ast_nodes, get_ast_from_path
    from cosmic_ray.plugins import get_operator, operator_names

    for path in modules:
        source = path.read_text()
        lines = source.splitlines()
        sha = hashlib.sha256(source.encode()).hexdigest()
        spans = _annotation_spans(source)
        tree = get_ast_from_path(path)
        nodes = list(ast_nodes(tree))
        module = path.resolve().relative_to(root.resolve()).as_posix()
        for name in operator_names():
            kind = get_operator(name)
            if kind.arguments():
                continue
            operator = kind()
            positions = [start for node in nodes for start, _ in operator.mutation_positions(node)]
            for occurrence, (row, column) in enumerate(positions):
                yield Mutant(module, name, occurrence, row, lines[row - 1].strip(),
                             _inside(spans, row, column), sha)


Span = tuple[tuple[int, int], tuple[int, int]]


def _annotation_spans(source: str) -> list[Span]:
    """Where the module's annotations are, when it defers them (`from __future__ import
    annotations`): they are then strings nobody evaluates, so a mutation there changes no
    behaviour. Nothing for a module that evaluates its annotations."""
    tree = ast.parse(source)
    deferred = any(isinstance(node, ast.ImportFrom) and node.module == "__future__"
                   and any(alias.name == "annotations" for alias in node.names)
                   for node in tree.body)
    if not deferred:
        return []
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.returns is not None:
                found.append(node.returns)
            arguments = node.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                        *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)):
                if arg.annotation is not None:
                    found.append(arg.annotation)
    return [((e.lineno, e.col_offset), (e.end_lineno or e.lineno, e.end_col_offset or 0))
            for e in found]


def _inside(spans: list[Span], row: int, column: int) -> bool:
    return any(start <= (row, column) < end for start, end in spans)


def mutated_source(mutant: Mutant, path: Path) -> str:
    """The module's source with the mutant's one change; SpecError when the module is not the
    version the mutant was made from or the operator no longer applies there."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    source = path.read_text()
    if hashlib.sha256(source.encode()).hexdigest() != mutant.source_sha:
        raise SpecError(f"{mutant.module} changed since the mutant {mutant.id} was made")
    code = mutate_code(source, get_operator(mutant.operator)(), mutant.occurrence)
    if code is None:
        raise SpecError(f"the mutant {mutant.id} no longer applies to {mutant.module}")
    return str(code)
