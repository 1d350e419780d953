"""Loading an executor from `module:factory`: the reference loads; every kind of bad path is a
one-line SpecError that says what is wrong."""

from __future__ import annotations

import pytest

from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory
from atmostonce.spec.errors import SpecError
from atmostonce.spec.protocol import Executor, ExecutorConfig


def test_the_default_executor_loads_and_builds_executors() -> None:
    factory = load_factory(DEFAULT_EXECUTOR)
    assert isinstance(factory(ExecutorConfig(fence=True)), Executor)


@pytest.mark.parametrize(("path", "says"), [
    ("atmostonce.executor", "malformed executor path"),
    (":reference", "malformed executor path"),
    ("atmostonce.executor:", "malformed executor path"),
    ("atmost once:reference", "malformed executor path"),
    ("atmostonce.no_such_module:factory", "cannot import executor module"),
    ("atmostonce.executor:no_such_factory", "has no attribute"),
    ("atmostonce.spec:__doc__", "is not callable"),
    ("atmostonce.spec.keys:build_key", "failed to build an executor"),
    ("builtins:repr", "does not satisfy atmostonce.spec.protocol.Executor"),
])
def test_a_bad_executor_path_is_a_one_line_spec_error(path: str, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_factory(path)
    message = str(caught.value)
    assert says in message
    assert "\n" not in message
