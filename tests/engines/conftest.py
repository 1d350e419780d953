"""The engine tests' temporary files (a failing chaos run keeps its own) under `tmp_path`."""

from tests.chaos.conftest import runs_in_tmp_path

__all__ = ["runs_in_tmp_path"]
