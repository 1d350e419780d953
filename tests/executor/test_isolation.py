"""The executor is checked against the model, so it must never be derived from it: nothing under
atmostonce/executor imports atmostonce.model, and the core imports only the spec and the
protocol. The factory satisfies the protocol under its documented path."""

from __future__ import annotations

import ast
import importlib
from dataclasses import replace
from pathlib import Path

import pytest

import atmostonce
from atmostonce.executor import reference
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import Executor, ExecutorConfig

EXECUTOR_DIR = Path(atmostonce.__file__).resolve().parent / "executor"
CORE_ALLOWED = ("atmostonce.spec", "atmostonce.spec.protocol", "atmostonce.executor")


def package_of(path: Path) -> str:
    return ".".join(path.relative_to(EXECUTOR_DIR.parent.parent).with_suffix("").parts[:-1])


def imported_modules(path: Path, package: str | None = None) -> set[str]:
    """Every module `path` imports, relative imports resolved against its package."""
    package = package_of(path) if package is None else package
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def executor_files() -> list[Path]:
    return sorted(p for p in EXECUTOR_DIR.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.clause("D-5", "D-8")
def test_nothing_under_the_executor_imports_the_model() -> None:
    files = executor_files()
    assert files
    offenders = {
        str(path.relative_to(EXECUTOR_DIR)): sorted(
            m for m in imported_modules(path)
            if m == "atmostonce.model" or m.startswith("atmostonce.model."))
        for path in files
    }
    assert {f: m for f, m in offenders.items() if m} == {}


@pytest.mark.clause("D-5")
def test_the_core_imports_only_the_spec_and_the_protocol() -> None:
    stray: dict[str, list[str]] = {}
    for path in executor_files():
        if "runtime" in path.relative_to(EXECUTOR_DIR).parts:
            continue
        bad = sorted(m for m in imported_modules(path)
                     if m.startswith("atmostonce") and m != "atmostonce"
                     and not m.startswith(CORE_ALLOWED))
        if bad:
            stray[path.name] = bad
    assert stray == {}


def test_the_scan_sees_relative_and_absolute_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import atmostonce.model.system\nfrom ..model import check\n"
                      "from . import state\nfrom atmostonce import model\n")
    found = imported_modules(sample, "atmostonce.executor")
    assert {"atmostonce.model.system", "atmostonce.model", "atmostonce.model.check",
            "atmostonce.executor.state"} <= found
    assert "atmostonce.spec.records" in imported_modules(EXECUTOR_DIR / "attempts.py")


@pytest.mark.clause("TC-POL-1")
def test_the_factory_loads_by_its_path_and_satisfies_the_protocol() -> None:
    module, _, name = "atmostonce.executor:reference".partition(":")
    factory = getattr(importlib.import_module(module), name)
    assert factory is reference
    executor = factory(ExecutorConfig())
    assert isinstance(executor, Executor)


@pytest.mark.clause("D-12")
@pytest.mark.parametrize("changes", [
    {"lease": 10.0, "heartbeat_timeout": 10.0},
    {"max_attempts": 0},
    {"queue_timeout": -1.0},
])
def test_options_that_break_a_decision_are_refused(changes: dict[str, float]) -> None:
    with pytest.raises(SpecError):
        reference(replace(ExecutorConfig(), **changes))  # type: ignore[arg-type]
