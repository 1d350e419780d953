"""A program that embeds the runtime server with options built in Python rather than parsed from
a command line, as an operator's own program does: the options reach the executor's check
unfiltered. It starts the server on a journal, stops it once it listens, and exits 0; options
or a journal the executor refuses are one line on stderr and exit 2.

    python -m atmostonce.mutation.embedded JOURNAL EXECUTOR '{"max_attempts": 0}'
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from atmostonce.arguments import EXIT_BAD_INPUT
from atmostonce.spec.errors import SpecError


async def _serve_once(journal: Path, executor: str, options: dict[str, object]) -> int:
    from atmostonce.check.executors.guard import ProtocolBreach
    from atmostonce.check.executors.loading import load_factory
    from atmostonce.runtime.driver import refused_input
    from atmostonce.runtime.server import serve
    from atmostonce.spec.protocol import ExecutorConfig

    config = ExecutorConfig(**options)  # type: ignore[arg-type]
    stop = asyncio.Event()

    def listening(line: str) -> None:
        print(line, flush=True)
        stop.set()

    try:
        return await serve(journal, "127.0.0.1", 0, config, stop, listening,
                           load_factory(executor))
    except ProtocolBreach as breach:
        refused_input(breach)
        raise


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if len(args) != 3:
            raise SpecError("expected JOURNAL EXECUTOR OPTIONS-JSON")
        try:
            options = json.loads(args[2])
        except ValueError as error:
            raise SpecError(f"the options are not JSON: {error}") from None
        if not isinstance(options, dict):
            raise SpecError("the options must be a JSON object")
        return asyncio.run(_serve_once(Path(args[0]), args[1], options))
    except SpecError as error:
        print(f"embedded server: error: {error}", file=sys.stderr, flush=True)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
