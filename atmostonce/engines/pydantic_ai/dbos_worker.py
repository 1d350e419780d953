"""An application process of Pydantic AI on DBOS:
`python -m atmostonce.engines.pydantic_ai.dbos_worker --variant NAME ...`, the DBOS worker
(`engines.dbos.worker`) with the session workflow of `dbos_app`."""

from __future__ import annotations

import argparse
from collections.abc import Coroutine, Sequence
from typing import Any, NoReturn

from atmostonce.engines.dbos.worker import parser_of, run
from atmostonce.engines.pydantic_ai.dbos_app import VARIANTS, WORKER, register
from atmostonce.engines.worker_main import worker_main
from atmostonce.runtime.options import config_from_args


def main(argv: Sequence[str] | None = None) -> NoReturn:
    worker_main("pydantic ai dbos worker", parser_of(WORKER, VARIANTS), _work, argv)


def _work(args: argparse.Namespace) -> Coroutine[Any, Any, object]:
    return run(args, VARIANTS[args.variant], config_from_args(args), register)


if __name__ == "__main__":
    main()
