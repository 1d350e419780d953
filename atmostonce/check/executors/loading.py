"""Loading an executor under test from a `module:factory` path, as every command takes it.

The module is looked for where `python -m atmostonce` looks, the current directory included,
also when the command runs as the installed `atmostonce` script (whose own directory, not the
current one, starts Python's path). Anything wrong with the path is bad input: a SpecError with
one line that says what (the CLI turns it into exit code 2).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable
from typing import cast

from atmostonce.spec.errors import SpecError, a_value_of
from atmostonce.spec.protocol import Executor, ExecutorConfig, ExecutorFactory

DEFAULT_EXECUTOR = "atmostonce.executor:reference"

_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def load_callable(path: str, what: str, example: str,
                  shape: str = "module:function") -> Callable[..., object]:
    """The callable at `path` (`package.module:name`, the name possibly dotted); SpecError, one
    line, for a path that is malformed, cannot be imported or names nothing callable. `what`
    names it in errors (an executor, an engine, a check)."""
    if not isinstance(path, str) or not _PATH.match(path):
        raise SpecError(f"malformed {what} path {path!r}: expected {shape}, such as {example}"
                        f"{_dotted_hint(path, shape)}")
    module_name, _, attribute = path.partition(":")
    search_current_directory()
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise SpecError(
            f"cannot import {what} module {module_name!r}: {type(error).__name__}: {error}"
        ) from None
    target: object = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise SpecError(f"{what} module {module_name!r} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise SpecError(f"{what} {path!r} is not callable")
    found: Callable[..., object] = target
    return found


def _dotted_hint(path: object, shape: str) -> str:
    """For a file path (`examples/my_executor.py:factory`), the dotted form it likely means,
    as the end of the error; nothing otherwise."""
    if not isinstance(path, str):
        return ""
    file, colon, attribute = path.partition(":")
    if not file.endswith(".py") and "/" not in file and os.sep not in file:
        return ""
    parts = [p for p in file.removesuffix(".py").replace(os.sep, "/").split("/") if p != "."]
    if os.path.isabs(file):
        parts, where = parts[-1:], os.path.dirname(file) or "/"
    else:
        where = "the directory that holds " + (f"{parts[0]}/" if len(parts) > 1 else file)
    name = attribute if colon and attribute else shape.partition(":")[2]
    return f"; that is a file path: write the dotted form {'.'.join(parts)}:{name}, run from " \
        f"{where}"


def search_current_directory() -> None:
    """Put the current directory on the import path, after what is there, once: a module of
    the user's is found, and a file there never shadows an installed package. It stays, so
    the loaded module's own later imports of its neighbours work too."""
    try:
        here = os.getcwd()
    except OSError:
        return
    if not any(os.path.abspath(entry or os.curdir) == here for entry in sys.path):
        sys.path.append(here)


def load_factory(path: str) -> ExecutorFactory:
    """The factory at `path` (`package.module:function`), checked by building one executor with
    the default configuration and testing it against the `Executor` protocol."""
    target = load_callable(path, "executor", DEFAULT_EXECUTOR, "module:factory")
    try:
        built = target(ExecutorConfig())
    except Exception as error:
        raise SpecError(
            f"executor factory {path!r} failed to build an executor: "
            f"{type(error).__name__}: {error}"
        ) from None
    if not isinstance(built, Executor):
        missing = [name for name in ("handle", "recover", "snapshot")
                   if not callable(getattr(built, name, None))]
        raise SpecError(
            f"executor factory {path!r} returned {a_value_of(type(built).__name__)}, which "
            f"does not satisfy atmostonce.spec.protocol.Executor (missing: {', '.join(missing)})"
        )
    return cast(ExecutorFactory, target)
