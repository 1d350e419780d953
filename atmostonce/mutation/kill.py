"""One mutant's trial, in its own process: the mutated module is already in place on this
process's import path (the pipeline wrote it into a private copy of the package); load the
executor from there and run the stages in order until one kills it. Prints one JSON object.

    python -m atmostonce.mutation.kill --executor atmostonce.executor:reference \
        --stages simulation-20,conformance-5
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from atmostonce.mutation.stages import BY_NAME


def trial(executor: str, stages: list[str]) -> dict[str, object]:
    """The first stage that kills the mutant (`killed_by`, None if it survived them all), its
    detail, and the seconds each stage took."""
    from atmostonce.check.executors.loading import load_factory
    from atmostonce.spec.errors import SpecError

    seconds: dict[str, float] = {}
    try:
        factory = load_factory(executor)
    except SpecError as error:
        return {"killed_by": "import", "layer": "import", "detail": str(error),
                "seconds": seconds}
    for name in stages:
        stage = BY_NAME[name]
        started = time.monotonic()
        try:
            verdict = stage.check(executor, factory)
        except Exception as error:
            seconds[name] = time.monotonic() - started
            return {"killed_by": name, "layer": stage.layer, "seconds": seconds,
                    "detail": f"the check crashed: {type(error).__name__}: {error}"}
        seconds[name] = time.monotonic() - started
        if verdict.killed:
            return {"killed_by": name, "layer": stage.layer, "detail": verdict.detail,
                    "seconds": seconds}
    return {"killed_by": None, "layer": None, "detail": "", "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m atmostonce.mutation.kill")
    parser.add_argument("--executor", required=True)
    parser.add_argument("--stages", required=True)
    args = parser.parse_args(argv)
    sys.stdout.write(json.dumps(trial(args.executor, args.stages.split(","))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
