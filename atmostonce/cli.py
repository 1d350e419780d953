"""The `atmostonce` command: verify, clauses, and the tools of each layer.

Exit codes scripts can trust: 0 when everything checked holds, 1 when a check fails (with the
counterexample), 2 for bad input (one line naming the problem, no traceback).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from atmostonce import __version__, arguments, progress
from atmostonce.fanout import way as fanout
from atmostonce.spec.errors import SpecError

if TYPE_CHECKING:
    from atmostonce.model.config import ModelConfig as ModelConfigT

EXIT_OK = 0
EXIT_FAILED = 1


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_clauses(args: argparse.Namespace) -> int:
    from atmostonce.check.clauses import coverage

    rows = coverage.matrix()
    if args.ids:
        from atmostonce.check.clauses.lookup import property_lines, select

        rows, properties = select(rows, args.ids)
        for found in properties:
            print("\n".join(property_lines(found)))
        if not rows:
            return EXIT_OK
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
    if not args.ids:
        print(f"\n{len(rows)} clauses, {uncovered} without code or tests")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from atmostonce import verify
    from atmostonce.check.executors import pipe
    from atmostonce.check.executors.loading import DEFAULT_EXECUTOR, load_factory

    layers = verify.LAYERS if args.layers is None else \
        arguments.names(args.layers, "--layers", "layer", verify.LAYERS)
    report = args.report is not None
    if report:
        from atmostonce.report.libraries import require

        require()
    way = fanout.chosen(args)
    unjudged: dict[str, str] = {}
    if args.engine is not None:
        if not way.serial:
            raise SpecError("--processes and --ray fan out the conformance schedules and "
                            "simulation seeds, which a black-box engine does not run; give "
                            "them with --executor")
        if args.quick:
            raise SpecError("--quick bounds the layers that judge a sans-IO executor; give it "
                            "with --executor or --executor-cmd, not --engine")
        if args.executor is not None or args.executor_cmd is not None:
            raise SpecError("give --executor or --engine, not both: an engine runs its own "
                            "executor")
        from atmostonce.engines.adapter import load_engine

        load_engine(args.engine)
        subject = args.engine
        unjudged = {layer: why for layer, why in verify.NOT_FOR_ENGINES.items()
                    if layer in layers}
        checks = verify.engine_plan(args.engine, layers, report)
        if not checks:
            raise SpecError(f"--layers {','.join(layers)}: none of them applies to a black-box "
                            "engine (they need a sans-IO executor); give spec, model or runtime")
    elif pipe.chosen(args, None):
        checks = verify.plan(args.executor, pipe.from_environment, layers, report, args.seed,
                             args.quick, way)
        subject = f"--executor-cmd {shlex.quote(args.executor_cmd)}"
    else:
        subject = DEFAULT_EXECUTOR if args.executor is None else args.executor
        checks = verify.plan(subject, load_factory(subject), layers, report, args.seed,
                             args.quick, way)
    with progress.board(args.json) as shown:
        results = verify.run(checks, shown)
    for r in results:
        r.summary, r.details = pipe.shown(r.summary), [pipe.shown(d) for d in r.details]
    passed = all(r.ok for r in results)
    if args.report is not None:
        from atmostonce.report.page import write

        write(verify.report_page(subject, _verify_command(args), results, unjudged),
              args.report)
    if args.json:
        print(json.dumps({
            "verdict": "pass" if passed else "fail",
            "checks": [r.as_json() for r in results],
            "not_checkable": unjudged,
            "skipped": verify.quick_skipped(layers) if args.quick else {},
        }, indent=2))
    else:
        print(f"atmostonce verify: {subject} against the Tool Calls specification")
        if args.engine is None:
            print("\n".join(verify.scope_lines(layers, args.quick)))
        for line in verify.preamble(results):
            print(line)
        for r in results:
            print(f"  [{'ok' if r.ok else 'FAIL':>4}] {r.layer:<6} {r.name}: {r.summary}")
            if r.coverage:
                print(f"         {r.coverage}")
            for line in r.details:
                print(f"         - {line}")
        for layer, why in unjudged.items():
            print(f"  [ -- ] {layer}: not checkable on a black-box engine: {why}")
        failed = sum(1 for r in results if not r.ok)
        noun = "check" if len(results) == 1 else "checks"
        apart = (f", {len(unjudged)} {'layer' if len(unjudged) == 1 else 'layers'} not checkable"
                 if unjudged else "")
        print(f"verdict: {'PASS' if passed else 'FAIL'} "
              f"({len(results)} {noun}, {failed} failed{apart})")
    return EXIT_OK if passed else EXIT_FAILED


def _verify_command(args: argparse.Namespace) -> str:
    """The verify command line as the report shows it."""
    parts = ["atmostonce verify"]
    for flag, value in (("--executor", None if args.executor_cmd else args.executor),
                        ("--executor-cmd", args.executor_cmd and shlex.quote(args.executor_cmd)),
                        ("--engine", args.engine),
                        ("--layers", args.layers), ("--report", args.report),
                        ("--seed", args.seed or None)):
        if value is not None:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def cmd_prove(args: argparse.Namespace) -> int:
    from atmostonce.check.clauses import proofs

    with progress.board(args.json) as shown:
        meter = shown.meter("CrossHair proofs")
        report = proofs.prove(per_condition_timeout=args.per_condition_timeout)
        meter.finish()
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



def _model_config(args: argparse.Namespace) -> ModelConfigT:
    from atmostonce.model.check import DEFAULT, with_mutant
    from atmostonce.model.config import parse_tools
    from atmostonce.spec.policy import EffectClass

    changes: dict[str, object] = {}
    for name in ("workers", "calls", "reasks", "max_attempts", "crashes", "partitions",
                 "restarts", "timeouts", "faults", "policy_changes", "reconcile_crashes"):
        value = getattr(args, name)
        if value is not None:
            changes[name] = value
    if args.tools is not None:
        arguments.items(args.tools, "--tools", [e.value for e in EffectClass])
        changes["tools"] = parse_tools(args.tools)
    if args.ledger is not None:
        changes["ledger"] = args.ledger
    if args.fence:
        changes["fence"] = True
    if args.cancel_records_failed:
        changes["cancel_records_failed"] = True
    if args.session_default is not None:
        changes["session_default"] = EffectClass.parse(args.session_default)
    if args.hints_keep_default:
        changes["hints_may_lower"] = False
    config = DEFAULT.with_(**changes)
    if args.mutant is not None:
        name = args.mutant.removeprefix("model:")
        config = with_mutant(config, name)
    return config


def cmd_check(args: argparse.Namespace) -> int:
    from atmostonce.model import check

    config = _model_config(args)

    with progress.board(args.json) as shown:
        meter = shown.meter("model check", total=check.states_expected(config, args.max_states),
                            unit="states")
        report = check.run(config, progress=check.shown_on(meter) if meter.live else None,
                           stop_at_first=not args.all_violations, max_states=args.max_states,
                           processes=args.processes, visited=args.visited,
                           reduction=args.reduction)
        meter.update(report.result.states)
        meter.finish()
    if args.out is not None:
        traces = report.violations + ([report.double_run] if report.double_run else [])
        try:
            args.out.write_text(json.dumps([t.as_json() for t in traces], indent=2))
        except OSError as error:
            raise SpecError(f"--out {args.out}: cannot write it: {error.strerror}") from None
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    else:
        print(check.render(report))
        if args.out is not None:
            print(f"  traces saved to {args.out}")
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_mutants(args: argparse.Namespace) -> int:
    from atmostonce.executor.mutants import EXECUTOR_MUTANTS
    from atmostonce.model import mutants

    rows = [("model", m.name, m.clause, m.expect, m.summary) for m in mutants.MUTANTS]
    rows += [("executor", m.name, m.clause, m.expect, m.summary)
             for m in EXECUTOR_MUTANTS.values()]
    for kind, name, clause, expect, summary in rows:
        line = f"{kind} {name}"
        print(f"{line:<46} {clause:<22} {expect:<28} {summary}" if args.verbose else line)
    from atmostonce.mutation.measured import measured_lines

    for line in measured_lines():
        print(f"# {line}")
    return EXIT_OK


def cmd_diagrams(args: argparse.Namespace) -> int:
    from atmostonce.model import diagrams

    written, note = diagrams.write(args.out)
    for w in written:
        print(f"wrote {w.dot}" + (f" and {w.svg}" if w.svg else ""))
    if note:
        _stderr(f"atmostonce: note: {note}")
    return EXIT_OK



def build_parser() -> argparse.ArgumentParser:
    from atmostonce.check.executors import pipe

    parser = arguments.Parser(
        prog="atmostonce",
        description="The tested specification of how a durable-execution engine runs an AI "
        "agent's tool calls: which calls may be retried, which run at most once, and which "
        "record each call ends with.",
        epilog="Exit codes: 0 all checks hold, 1 a check failed, 2 bad input. On a terminal the "
        "long commands show live progress on stderr; with --json, or when stdout is not a "
        "terminal, none.",
    )
    parser.add_argument("--version", action="version", version=f"atmostonce {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=arguments.Parser)
    sub.required = True

    verify = sub.add_parser(
        "verify", help="run every verification layer and print a verdict",
        description="Run every layer and print a verdict; exit 0 only when everything holds, "
        "1 with the counterexample when the executor breaks the spec, 2 when the executor path "
        "cannot be loaded. The layers, the values --layers takes: "
        "spec (judges the package: every clause has code and tests, CrossHair proves the "
        "spec's contracts); "
        "model (judges the package: the exhaustive model check at the default bound); "
        "conformance (judges the executor: in lockstep with the model over every schedule "
        "within a depth, then the probes, then the deep lockstep, a seeded Hypothesis search "
        "of longer programs whose failures shrink to a test one can paste); "
        "simulation (judges the executor: a seeded fault-simulation campaign in simulated "
        "time); "
        "runtime (judges the executor: a chaos run on real processes, workers killed with "
        "SIGKILL, paused and cut off, the server restarted). "
        "A failing schedule is printed with the command that replays it step by step "
        "(`atmostonce replay --schedule`); the codes in the output are clause and decision "
        "ids, which `atmostonce clauses ID` explains.",
    )
    verify.add_argument("--executor", metavar="MODULE:FACTORY",
                        help="the executor to check: a factory taking an ExecutorConfig and "
                        "returning an atmostonce.spec.protocol.Executor (default: the "
                        "reference executor)")
    pipe.add_arguments(verify)
    verify.add_argument("--engine", metavar="MODULE:FACTORY",
                        help="check a black-box engine instead, through its adapter (see "
                        "atmostonce.engines.adapter; e.g. atmostonce.engines.temporal:engine): "
                        "the spec and model layers and a chaos run on it; conformance and "
                        "simulation, which need a sans-IO executor, are listed as not checkable")
    verify.add_argument("--layers", metavar="LIST",
                        help="comma-separated layers to run, of spec, model, conformance, "
                        "simulation, runtime (default: all of them)")
    verify.add_argument("--quick", action="store_true",
                        help="a bounded run to iterate on an executor in seconds: conformance "
                        "at a small depth with the probes and a few dozen simulation seeds; "
                        "it skips the layers that judge the package, the deep lockstep and "
                        "the runtime chaos run, and says so")
    verify.add_argument("--seed", type=arguments.seed, default=0, metavar="N",
                        help="seed of the conformance layer's deep lockstep, a Hypothesis "
                        "search derandomized by it (default 0); a failure prints the command "
                        "that runs it again")
    fanout.add_arguments(verify, "the conformance layer's schedules and the simulation "
                         "layer's seeds")
    verify.add_argument("--json", action="store_true", help="print one JSON object")
    verify.add_argument("--report", type=arguments.output_file, metavar="FILE.html",
                        help="also write a self-contained HTML page: the verdict, each layer's "
                        "figures and plots, the state diagrams coloured by how often each layer "
                        "took each transition, and every counterexample as a sequence chart "
                        "(needs the report extra: pip install 'atmostonce[report]')")
    verify.set_defaults(func=cmd_verify)

    clauses = sub.add_parser(
        "clauses", help="print the clause matrix: each clause with its code and tests",
        description="Every normative statement of the Tool Calls page, each open decision and "
        "each finding, with the code that implements it and the tests that pin it.",
    )
    clauses.add_argument("ids", nargs="*", metavar="ID",
                         help="print only these: the page's clause ids (TC-...), decision "
                         "(D-N) and finding (F-N) ids, or property ids, as verify's output "
                         "names them")
    clauses.add_argument("--json", action="store_true",
                         help="print a list of objects with id, anchor, summary, code, tests")
    clauses.set_defaults(func=cmd_clauses)

    prove = sub.add_parser(
        "prove", help="check the spec's contracts with CrossHair",
        description="Run CrossHair (analysis kind PEP316, contracts written as pre: and post: "
        "lines in the docstrings; --report_all) over the spec's decision "
        "functions; exit 0 only when every postcondition is confirmed over all paths.",
    )
    prove.add_argument("--per-condition-timeout", type=arguments.positive, default=20.0,
                       metavar="SECONDS", help="CrossHair's time per condition (default 20)")
    prove.add_argument("--json", action="store_true", help="print one JSON object")
    prove.set_defaults(func=cmd_prove)

    check = sub.add_parser(
        "check", help="explore the model exhaustively within bounds",
        description="Explore every reachable state of the model within the bounds, check every "
        "always-property, witness every sometimes-property, check the eventually-properties "
        "under fairness, and establish finding F-6. Exit 0 when all holds, 1 with the shortest "
        "counterexample (or the unwitnessed property), 2 on bad arguments.",
    )
    bounds = check.add_argument_group("bounds (default: the default bound)")
    for flag, text in (
        ("--workers", "worker processes (1-3, default 2)"),
        ("--calls", "calls the agent's model asks at first (1-4, default 1)"),
        ("--reasks", "calls asked again after a failed or unknown record (default 1)"),
        ("--max-attempts", "attempts of a CallTool call (1-5, default 2)"),
        ("--crashes", "worker crashes on one path (default 1)"),
        ("--partitions", "connection losses on one path (default 1)"),
        ("--restarts", "server restarts on one path (default 1)"),
        ("--timeouts", "attempt time-outs on one path (default 1)"),
        ("--faults", "faults of all kinds together on one path (default 2)"),
        ("--policy-changes", "policy changes on one path (default 1)"),
        ("--reconcile-crashes", "reconcile job crashes on one path (default 1)"),
    ):
        bounds.add_argument(flag, type=arguments.whole, metavar="N", help=text)
    bounds.add_argument("--tools", metavar="MIX",
                        help="comma-separated effect classes, each optionally +approval or "
                        "-approval, or EFFECT~HINT for a tool without a policy whose framework "
                        "metadata claims HINT (default read,idempotent_write,"
                        "non_idempotent_write,unclassified)")
    bounds.add_argument("--session-default", metavar="EFFECT",
                        help="the session's default effect, which tools without a policy or "
                        "a hint fall back on (default none)")
    bounds.add_argument("--hints-keep-default", action="store_true",
                        help="framework metadata may not lower the session default "
                        "(decision D-22; default: it may)")
    check.add_argument("--ledger", choices=("plain", "key", "business"),
                       help="how a non-idempotent write's service treats repeats (default plain)")
    check.add_argument("--fence", action="store_true",
                       help="model the executor's fence option (decision D-6)")
    check.add_argument("--cancel-records-failed", action="store_true",
                       help="model D-4's other choice: a cancelled single attempt that reached "
                       "a worker records failed, 'may still be running' (finding F-7), not "
                       "outcome_unknown")
    check.add_argument("--mutant", metavar="NAME", help="check a deliberately broken model "
                       "(see `atmostonce mutants`)")
    check.add_argument("--all-violations", action="store_true",
                       help="keep exploring after the first violation")
    check.add_argument("--max-states", type=arguments.count, metavar="N",
                       help="stop after N states (the check is then incomplete and exits 1)")
    check.add_argument("--processes", type=arguments.count, default=1, metavar="N",
                       help="explore over N processes, one per core: each owns the states "
                       "a hash gives it; the same states and verdicts as one (default 1)")
    check.add_argument("--visited", choices=("exact", "fingerprint", "auto"), default="auto",
                       help="how explored states are remembered: exact keeps each state; "
                       "fingerprint keeps a 64-bit hash and drops each state once expanded "
                       "(less memory; the report prints the chance a collision missed a "
                       "state); auto: exact up to 2,000,000 states, fingerprints beyond "
                       "(default auto)")
    check.add_argument("--reduction", choices=("none", "por"), default="none",
                       help="por: partial-order reduction, exploring only one call's (or one "
                       "worker's, or the reconcile job's) steps where they commute with all "
                       "else; the same verdicts, fewer states; one process only (with "
                       "--processes N it is off) (default none)")
    check.add_argument("--out", type=arguments.output_file, metavar="FILE",
                       help="save counterexamples and the double run's witness as JSON "
                       "traces for `atmostonce replay --trace FILE` (its directory must exist)")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(func=cmd_check)

    mutants = sub.add_parser(
        "mutants", help="list the deliberately broken variants the checks must catch",
        description="Every mutant the package ships, one per line as KIND NAME: `model` ones "
        "for `atmostonce check --mutant NAME`, `executor` ones for `atmostonce verify "
        "--executor atmostonce.executor.mutants:NAME`; then, on lines that start with `#`, "
        "how many of the mutants a mutation-testing tool makes of the reference executor "
        "verify kills (python benchmarks/mutation.py).",
    )
    mutants.add_argument("-v", "--verbose", action="store_true",
                         help="add the clause each mutant breaks, the property that must "
                         "catch it, and what it does")
    mutants.set_defaults(func=cmd_mutants)

    diagrams = sub.add_parser(
        "diagrams", help="draw the state diagrams from the model's definitions",
        description="Write the DOT of every component machine (and SVG when Graphviz's dot is "
        "installed), drawn from the same transitions definitions the checks run on: guards on "
        "the edges, initial and terminal states marked, a legend; and overview.dot, how the "
        "machines interact, found by exploring the model.",
    )
    diagrams.add_argument("--out", type=arguments.output_directory, default="diagrams",
                          metavar="DIR", help="directory to write into, created when missing "
                          "(default diagrams)")
    diagrams.set_defaults(func=cmd_diagrams)

    from atmostonce.chaos.commands import register as register_chaos
    from atmostonce.runtime.commands import register as register_runtime
    from atmostonce.runtime.trace_command import extend_replay
    from atmostonce.sim.commands import register as register_simulation
    from atmostonce.sim.schedule_command import extend_replay as extend_replay_schedule

    register_simulation(sub)
    register_runtime(sub)
    extend_replay(sub.choices["replay"])
    extend_replay_schedule(sub.choices["replay"])
    register_chaos(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return arguments.run(build_parser(), argv)

if __name__ == "__main__":
    sys.exit(main())
