"""The library face: `from atmostonce import ...` gives every exported name, each the object of
the module it lives in; mypy sees the same names (the TYPE_CHECKING imports match the lazy
table); and `import atmostonce` stays light: it loads no other module of the package, the
asyncio runtime least of all, until a name that needs it is used."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import atmostonce

ROOT = Path(__file__).resolve().parent.parent
INIT = ROOT / "atmostonce" / "__init__.py"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.mark.parametrize("name", sorted(set(atmostonce.__all__) - {"__version__"}))
def test_every_exported_name_is_the_object_of_its_module(name: str) -> None:
    home = atmostonce._HOME[name]
    assert getattr(atmostonce, name) is getattr(importlib.import_module(home), name)


def test_all_lists_exactly_the_lazy_names_and_the_version() -> None:
    assert sorted(atmostonce.__all__) == sorted(["__version__", *atmostonce._HOME])
    assert len(atmostonce.__all__) == len(set(atmostonce.__all__))


def test_dir_shows_the_exported_names_and_not_the_modules_own_imports() -> None:
    shown = dir(atmostonce)
    assert shown == sorted(atmostonce.__all__)
    for helper in ("Any", "TYPE_CHECKING", "annotations", "importlib"):
        assert helper not in shown


def test_the_type_checking_imports_are_the_lazy_table() -> None:
    """What mypy sees (the `if TYPE_CHECKING:` imports) is what `__getattr__` imports."""
    tree = ast.parse(INIT.read_text())
    (guarded,) = [node for node in tree.body if isinstance(node, ast.If)
                  and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    seen: dict[str, str] = {}
    for node in guarded.body:
        assert isinstance(node, ast.ImportFrom)
        assert node.module is not None
        for alias in node.names:
            seen[alias.asname or alias.name] = node.module
    assert seen == atmostonce._HOME


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Clinet'"):
        atmostonce.Clinet  # type: ignore[attr-defined]  # noqa: B018


def test_import_atmostonce_loads_nothing_else_of_the_package() -> None:
    run = _python("import sys, atmostonce\n"
                  "print(sorted(m for m in sys.modules if m.startswith('atmostonce')))\n"
                  "from atmostonce import ToolPolicy, EffectClass, ExecutorConfig\n"
                  "print('runtime' if 'atmostonce.runtime' in sys.modules else 'no runtime')")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["['atmostonce']", "no runtime"]


def test_the_issue_one_liner_works_in_a_fresh_interpreter() -> None:
    run = _python("from atmostonce import Client, ToolPolicy, EffectClass; "
                  "import sys; print(Client.__module__, 'atmostonce.runtime' in sys.modules)")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["atmostonce.runtime.client", "True"]
