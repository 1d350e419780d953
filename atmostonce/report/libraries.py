"""The report's libraries are an optional extra: `--report` without them is bad input, said in
one line before any work starts."""

from __future__ import annotations

import importlib.util

from atmostonce.spec.errors import SpecError

NEEDED = ("jinja2", "matplotlib")


def require() -> None:
    """SpecError naming the extra to install when Jinja2 or matplotlib is missing."""
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        raise SpecError(f"--report needs {' and '.join(missing)}: "
                        "pip install 'atmostonce[report]'")
