"""The `atmostonce` command: verify, clauses, and the tools of each layer.

Exit codes scripts can trust: 0 when everything checked holds, 1 when a check fails (with the
counterexample), 2 for bad input (one line naming the problem, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from atmostonce import __version__
from atmostonce.spec.errors import SpecError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but bad arguments exit 2 with one line, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("atmostonce").strip()
        raise SpecError(f"{command}: {message}" if command else message)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_clauses(args: argparse.Namespace) -> int:
    from atmostonce.check import coverage

    rows = coverage.matrix()
    if args.json:
        print(json.dumps([row.as_json() for row in rows], indent=2))
        return EXIT_OK
    width = max(len(row.clause.id) for row in rows)
    for row in rows:
        c = row.clause
        print(f"{c.id:<{width}}  #{c.anchor}  [{c.kind.value}]")
        print(f"{'':<{width}}  {c.summary}")
        if c.answer:
            print(f"{'':<{width}}  answer: {c.answer}")
        print(f"{'':<{width}}  code:  {', '.join(row.code) or '(none)'}")
        print(f"{'':<{width}}  tests: {', '.join(row.tests) or '(none)'}")
    uncovered = sum(1 for row in rows if not row.code or not row.tests)
    print(f"\n{len(rows)} clauses, {uncovered} without code or tests")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from atmostonce import verify

    progress: Callable[[str], None] = (lambda _: None) if args.json else (
        lambda what: _stderr(f"... {what}")
    )
    results = verify.run(verify.SPEC_CHECKS, progress)
    passed = all(r.ok for r in results)
    if args.json:
        print(json.dumps({
            "verdict": "pass" if passed else "fail",
            "checks": [r.as_json() for r in results],
        }, indent=2))
    else:
        print("atmostonce verify: the reference executor against the Tool Calls specification")
        for r in results:
            print(f"  [{'ok' if r.ok else 'FAIL':>4}] {r.layer:<6} {r.name}: {r.summary}")
            for line in r.details:
                print(f"         - {line}")
        failed = sum(1 for r in results if not r.ok)
        print(f"verdict: {'PASS' if passed else 'FAIL'} "
              f"({len(results)} checks, {failed} failed)")
    return EXIT_OK if passed else EXIT_FAILED


def cmd_prove(args: argparse.Namespace) -> int:
    from atmostonce.check import proofs

    report = proofs.prove(per_condition_timeout=args.per_condition_timeout)
    if args.json:
        print(json.dumps({
            "ok": report.ok,
            "analysis_kind": proofs.ANALYSIS_KIND,
            "confirmed": [c.where() for c in report.confirmed],
            "failed": [{"where": c.where(), "condition": c.text, "why": why}
                       for c, why in report.failed],
            "unmatched": report.unmatched,
            "seconds": report.seconds,
        }, indent=2))
    else:
        for c in report.confirmed:
            print(f"confirmed  {c.where()}  {c.text}")
        for c, why in report.failed:
            print(f"FAILED     {c.where()}  {c.text}\n           {why}")
        for line in report.unmatched:
            print(f"UNEXPECTED {line}")
        total = len(report.confirmed) + len(report.failed)
        print(f"{len(report.confirmed)}/{total} postconditions confirmed over all paths "
              f"in {report.seconds:.1f} s ({' '.join(report.command[1:4])} ...)")
    return EXIT_OK if report.ok else EXIT_FAILED


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SpecError(f"expected a number of seconds, got {text!r}") from None
    if value <= 0:
        raise SpecError(f"expected a positive number of seconds, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="atmostonce",
        description="The tested specification of how a durable-execution engine runs an AI "
        "agent's tool calls: which calls may be retried, which run at most once, and which "
        "record each call ends with.",
        epilog="Exit codes: 0 all checks hold, 1 a check failed, 2 bad input.",
    )
    parser.add_argument("--version", action="version", version=f"atmostonce {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    verify = sub.add_parser(
        "verify", help="run every verification layer and print a verdict",
        description="Run every layer (spec clause coverage and CrossHair proofs) and print a "
        "verdict; exit 0 only when everything holds.",
    )
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.set_defaults(func=cmd_verify)

    clauses = sub.add_parser(
        "clauses", help="print the clause matrix: each clause with its code and tests",
        description="Every normative statement of the Tool Calls page, each open decision and "
        "each finding, with the code that implements it and the tests that pin it.",
    )
    clauses.add_argument("--json", action="store_true",
                         help="print a list of objects with id, anchor, summary, code, tests")
    clauses.set_defaults(func=cmd_clauses)

    prove = sub.add_parser(
        "prove", help="check the spec's contracts with CrossHair",
        description="Run CrossHair (analysis kind PEP316, --report_all) over the spec's decision "
        "functions; exit 0 only when every postcondition is confirmed over all paths.",
    )
    prove.add_argument("--per-condition-timeout", type=_positive_float, default=20.0,
                       metavar="SECONDS", help="CrossHair's time per condition (default 20)")
    prove.add_argument("--json", action="store_true", help="print one JSON object")
    prove.set_defaults(func=cmd_prove)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code: int = args.func(args)
        return code
    except SpecError as error:
        _stderr(f"atmostonce: error: {error}")
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        _stderr("atmostonce: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
