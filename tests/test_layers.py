"""The package's imports follow its layers: each layer imports only the layers below it,
siblings of one layer never import each other, the executor never imports the model, the chaos
harness reaches an engine only through the adapter interface, and no module imports a module
that imports it back. The contracts live in `pyproject.toml` (`[tool.importlinter]`); CI runs
`lint-imports` over them too. Each check here is shown to fail on a graph with one bad import
added."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"


@cache
def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("atmostonce", cache_dir=None)


def _layer_contracts() -> list[tuple[list[grimp.Layer], set[str]]]:
    """Each layers contract of pyproject.toml as grimp layers ("a | b": independent siblings),
    with the packages it applies inside (none: the root's children)."""
    return [([grimp.Layer(*(m.strip() for m in layer.split("|")), independent=True)
              for layer in contract["layers"]], set(contract.get("containers", ())))
            for contract in _contracts() if contract["type"] == "layers"]


def _upward(graph: grimp.ImportGraph) -> set[tuple[str, str]]:
    """Every (importer, imported) package pair that goes against a layers contract."""
    return {(d.importer, d.imported)
            for layers, containers in _layer_contracts()
            for d in graph.find_illegal_dependencies_for_layers(layers=layers,
                                                                 containers=containers)}


def _forbidden(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    """Every chain from a forbidden contract's source to a module it may not import."""
    found = []
    for contract in _contracts():
        if contract["type"] != "forbidden":
            continue
        for source in contract["source_modules"]:
            for target in contract["forbidden_modules"]:
                if graph.chain_exists(importer=source, imported=target, as_packages=True):
                    found.append((source, target))
    return found


def _circles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One import chain per module that imports a module importing it back."""
    found = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                found.append((module, *back))
    return found


def test_every_layer_imports_only_the_layers_below_it() -> None:
    assert _upward(_graph()) == set()


def test_the_forbidden_imports_are_absent() -> None:
    assert _forbidden(_graph()) == []


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    assert _circles(_graph()) == []


def test_every_package_is_in_a_layer() -> None:
    graph = _graph()
    for layers, containers in _layer_contracts():
        for parent in containers or {"atmostonce"}:
            prefix = f"{parent}." if containers else ""
            layered = {f"{prefix}{m}" for layer in layers for m in layer.module_tails}
            packages = {m for m in graph.find_children(parent)
                        if m not in ("atmostonce.__main__",) and not (containers and m.endswith(
                            "__init__"))}
            assert packages <= layered, (parent, packages - layered)


def test_lint_imports_keeps_every_contract() -> None:
    done = subprocess.run([sys.executable, "-c", LINT, "--config", "pyproject.toml",
                           "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(("importer", "imported"), [
    ("atmostonce.spec.policy", "atmostonce.model.system"),
    ("atmostonce.check.history.entries", "atmostonce.executor.core"),
    ("atmostonce.executor.core", "atmostonce.runtime.server"),
    ("atmostonce.sim.engine", "atmostonce.runtime.client"),
    ("atmostonce.runtime.server", "atmostonce.engines.adapter"),
    ("atmostonce.check.host.host", "atmostonce.check.lockstep.state"),
    ("atmostonce.check.history.entries", "atmostonce.check.executors.guard"),
    ("atmostonce.check.lockstep.conformance", "atmostonce.check.probes.table"),
    ("atmostonce.guard.guard", "atmostonce.engines.adapter"),
    ("atmostonce.guard.journal", "atmostonce.executor.core"),
])
def test_an_upward_import_is_caught(importer: str, imported: str) -> None:
    graph = _graph()
    graph.add_import(importer=importer, imported=imported)
    assert any(imported.startswith(up) and importer.startswith(down)
               for down, up in _upward(graph))


@pytest.mark.parametrize(("importer", "imported"), [
    ("atmostonce.executor.state", "atmostonce.model.machines"),
    ("atmostonce.chaos.run", "atmostonce.engines.reference.adapter"),
    ("atmostonce.guard.moves", "atmostonce.model.system"),
])
def test_a_forbidden_import_is_caught(importer: str, imported: str) -> None:
    graph = _graph()
    graph.add_import(importer=importer, imported=imported)
    assert _forbidden(graph)


def test_a_circle_inside_a_package_is_caught() -> None:
    graph = _graph()
    graph.add_import(importer="atmostonce.spec.keys", imported="atmostonce.spec.session")
    graph.add_import(importer="atmostonce.spec.session", imported="atmostonce.spec.keys")
    assert ("atmostonce.spec.keys", "atmostonce.spec.session", "atmostonce.spec.keys") in \
        _circles(graph)


def test_the_guard_imports_only_the_spec_and_the_standard_library() -> None:
    """Without LangGraph and LangChain installed, `atmostonce.guard` imports, and it loads no
    package outside the standard library and no part of atmostonce but the spec and itself."""
    probe = ("import sys; sys.modules['langgraph'] = sys.modules['langchain'] = None; "
             "before = set(sys.modules); import atmostonce.guard; "
             "new = set(sys.modules) - before; "
             "print(sorted({m.split('.')[0] for m in new} - set(sys.stdlib_module_names))); "
             "print(sorted(m for m in new if m.startswith('atmostonce.') "
             "and not m.startswith(('atmostonce.spec', 'atmostonce.guard'))))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.splitlines() == ["['atmostonce']", "[]"], done.stdout


def test_the_langgraph_binding_without_the_extra_is_one_clear_error() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['langgraph'] = None; "
                           "import atmostonce.guard.langgraph"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].endswith(
        "atmostonce.guard.langgraph needs the 'langgraph' extra, which is not installed: "
        "pip install 'atmostonce[langgraph]'")
