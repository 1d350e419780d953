"""The start of every engine's worker process: the arguments each takes (its ledger, token,
name and events file) and the main that runs its work to an exit code the adapter reads."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NoReturn

from atmostonce.runtime.processes import exit_with_parent, run_worker


def add_process_arguments(parser: argparse.ArgumentParser) -> None:
    """What every engine's worker process is told: where the effect ledger listens, its
    token, the process's name, and the file its own notes or events go to."""
    parser.add_argument("--ledger", required=True, metavar="HOST:PORT")
    parser.add_argument("--token-file", required=True, metavar="PATH")
    parser.add_argument("--name", required=True)
    parser.add_argument("--events", required=True, metavar="PATH")


def worker_main(what: str, parser: argparse.ArgumentParser,
                work: Callable[[argparse.Namespace], Coroutine[Any, Any, object]],
                argv: Sequence[str] | None) -> NoReturn:
    """Parse `argv`, end with the parent, and run `work` by `run_worker`'s exit codes."""
    exit_with_parent()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    run_worker(what, work(args))
