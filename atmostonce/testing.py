"""What users import into their own test suites: the deep lockstep of the model and an executor.

    from atmostonce.testing import ExecutorMatchesModel

    class MyExecutorMatchesModel(ExecutorMatchesModel):
        executor = "my_engine.executor:factory"

    TestMyExecutor = MyExecutorMatchesModel.TestCase

A disagreement fails the test with the shortest program that shows it, printed as a test that
calls `replay`; `DEEP` is the bounds the machine runs at unless the subclass sets `config`.
"""

from __future__ import annotations

from atmostonce.check.lockstep.deep import DEEP, ExecutorMatchesModel, ProgramFailed, replay

__all__ = ["DEEP", "ExecutorMatchesModel", "ProgramFailed", "replay"]
