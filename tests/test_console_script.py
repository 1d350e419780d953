"""The installed `atmostonce` script finds a `module:factory` in the current directory, as
`python -m atmostonce` does: the one loader (`check.loading.load_callable`) puts the current
directory on the import path, so every `--executor`, `--engine` and `--check` gets it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.load import patience

SCRIPT = Path(sys.executable).with_name("atmostonce")

MODULE = '''\
"""An executor factory of the user's, beside which the command runs."""

from atmostonce.executor import reference


def factory(config):
    return reference(config)


def not_an_executor(config):
    return "no executor"
'''


def script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ATMOSTONCE_") and k != "PYTHONPATH"}
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120 * patience(), check=False)


@pytest.fixture
def here(tmp_path: Path) -> Path:
    """A directory holding the user's module `mymodule.py`."""
    (tmp_path / "mymodule.py").write_text(MODULE)
    return tmp_path


@pytest.mark.skipif(not SCRIPT.exists(), reason="the atmostonce script is not installed")
def test_the_script_runs_an_executor_from_the_current_directory(here: Path) -> None:
    """`simulate --executor mymodule:factory` imports the module beside it and runs."""
    done = script("simulate", "--seeds", "1", "--executor", "mymodule:factory", "--json",
                  cwd=here)
    assert done.returncode == 0, done.stderr
    assert '"executor": "mymodule:factory"' in done.stdout


@pytest.mark.skipif(not SCRIPT.exists(), reason="the atmostonce script is not installed")
def test_verify_loads_the_factory_from_the_current_directory(here: Path) -> None:
    """`verify` reaches the module beside it: the factory is found and judged (it builds no
    executor), not reported as a module that cannot be imported."""
    done = script("verify", "--executor", "mymodule:not_an_executor", cwd=here)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "returned a str, which does not satisfy" in done.stderr
    assert "cannot import" not in done.stderr


@pytest.mark.skipif(not SCRIPT.exists(), reason="the atmostonce script is not installed")
def test_a_module_elsewhere_is_still_not_found(here: Path, tmp_path_factory: pytest.TempPathFactory
                                              ) -> None:
    """Only the current directory is added: from another directory the module is unknown."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    done = script("verify", "--executor", "mymodule:factory", cwd=elsewhere)
    assert done.returncode == 2
    assert "cannot import executor module 'mymodule'" in done.stderr
