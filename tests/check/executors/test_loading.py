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
    ("builtins:id", "returned an int, which does not satisfy"),
])
def test_a_bad_executor_path_is_a_one_line_spec_error(path: str, says: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_factory(path)
    message = str(caught.value)
    assert says in message
    assert "\n" not in message


@pytest.mark.parametrize(("path", "dotted"), [
    ("examples/my_executor.py:factory", "examples.my_executor:factory"),
    ("examples/my_executor.py", "examples.my_executor:factory"),
    ("pkg/sub/mine.py:make", "pkg.sub.mine:make"),
    ("/abs/dir/mine.py:make", "mine:make, run from /abs/dir"),
])
def test_a_file_path_is_refused_with_its_dotted_form(path: str, dotted: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_factory(path)
    message = str(caught.value)
    assert f"write the dotted form {dotted}" in message
    assert "\n" not in message


def test_a_dotted_path_that_is_malformed_gets_no_file_hint() -> None:
    with pytest.raises(SpecError) as caught:
        load_factory("atmostonce.executor")
    assert "dotted form" not in str(caught.value)
